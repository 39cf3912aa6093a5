/** A page of the sandbox checkout as a browser gets it (redirects not followed). */
export interface Page {
  status: number;
  contentType: string | null;
  html: string;
}

/** GET the page, or POST its (empty) form. */
export async function page(url: string, method: 'GET' | 'POST' = 'GET'): Promise<Page> {
  const res = await fetch(url, {
    method,
    redirect: 'manual',
    ...(method === 'POST' ? { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' } : {}),
  });
  return { status: res.status, contentType: res.headers.get('content-type'), html: await res.text() };
}
