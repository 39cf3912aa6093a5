import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Markdown without fenced code blocks and code spans, where `](` or `#` mean nothing. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's heading anchors: lower case, punctuation dropped, each space a dash; repeats get -1, -2, …. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, text] of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** The relative link targets of a page: `[text](target)`, skipping URLs with a scheme. */
export function relativeLinks(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]).filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** Each link of `markdown` (as if it were the file `from`) whose file or heading does not exist. */
export function brokenLinks(from: string, markdown: string): string[] {
  return relativeLinks(markdown).filter((target) => {
    const [file, anchor] = target.split('#');
    const resolved = file ? path.resolve(path.dirname(from), decodeURIComponent(file)) : from;
    if (!existsSync(resolved)) return true;
    if (!anchor) return false;
    if (!resolved.endsWith('.md') || statSync(resolved).isDirectory()) return false;
    const text = resolved === from ? markdown : readFileSync(resolved, 'utf8');
    return !anchors(text).has(decodeURIComponent(anchor));
  });
}

/** The files a page links to, as absolute paths. */
export function linkedFiles(from: string, markdown: string): Set<string> {
  return new Set(
    relativeLinks(markdown)
      .map((t) => t.split('#')[0])
      .filter(Boolean)
      .map((f) => path.resolve(path.dirname(from), f)),
  );
}
