/**
 * The host names of eggs under the apps domain. An egg's main host is its slug; a deployment's is
 * `<slug>--<suffix>` and a preview's `<slug>--pr-<n>`. Slugs may not contain `--`, so the first
 * `--` of a host always ends the slug: no host of one egg can name another egg's (see
 * test/apps/hosts.test.ts, a property test).
 */

/** 3 to 40 characters: a lower-case letter, then letters, digits or single dashes, ending in a letter or digit. */
export const SLUG_RE = /^(?!.*--)[a-z][a-z0-9-]{1,38}[a-z0-9]$/;

export const SLUG_RULE =
  'must be 3 to 40 characters: a lower-case letter, then lower-case letters, digits or single dashes (never two in a row), ending in a letter or digit';

/** What a host under the apps domain names. */
export type HostTarget = { kind: 'app'; slug: string } | { kind: 'deployment'; slug: string; suffix: string } | { kind: 'preview'; slug: string; pr: number };

const SUFFIX_RE = /^[0-9a-z]{8}$/;
const PREVIEW_RE = /^pr-([1-9][0-9]{0,9})$/;

/** A deployment's part of its host: the last 8 characters of its id (Crockford base32, no dashes). */
export const deploymentSuffix = (deploymentId: string): string => deploymentId.slice(-8);

/** The first label of the target's host. */
export function hostLabel(target: HostTarget): string {
  switch (target.kind) {
    case 'app':
      return target.slug;
    case 'deployment':
      return `${target.slug}--${target.suffix}`;
    case 'preview':
      return `${target.slug}--pr-${target.pr}`;
  }
}

/** What a host's first label names, or null when it names nothing an egg could have. */
export function parseHostLabel(label: string): HostTarget | null {
  const cut = label.indexOf('--');
  const slug = cut < 0 ? label : label.slice(0, cut);
  if (!SLUG_RE.test(slug)) return null;
  if (cut < 0) return { kind: 'app', slug };
  const rest = label.slice(cut + 2);
  if (SUFFIX_RE.test(rest)) return { kind: 'deployment', slug, suffix: rest };
  const pr = PREVIEW_RE.exec(rest);
  if (pr && Number(pr[1]) <= 2_147_483_647) return { kind: 'preview', slug, pr: Number(pr[1]) };
  return null;
}

/** `https://<label>.<domain>` */
export const hostUrl = (target: HostTarget, appsDomain: string): string => `https://${hostLabel(target)}.${appsDomain}`;
