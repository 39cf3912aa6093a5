import { ValidationFailed } from '../../errors';

/**
 * An image reference as Docker parses it (distribution/reference): `[host[:port]/]path[:tag][@digest]`,
 * the path lower case, components joined by `.`, `_`, `__` or dashes; a name of at most 255
 * characters (Docker's limit), a tag of at most 128.
 */
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const HOST = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])`;
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[_.]|__|-+)[a-z0-9]+)*';
const NAME = `(?:${HOST}(?::[0-9]+)?/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*`;
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
const REFERENCE_RE = new RegExp(`^(${NAME})(?::${TAG})?(?:@${DIGEST})?$`);

const MAX_NAME = 255;
const MAX_REFERENCE = 512;
export const IMAGE_RULE = 'must be an image reference, `[registry[:port]/]name[:tag][@digest]` with a lower-case name of at most 255 characters';

/** The deploy's `image`, checked; null when none was given. */
export function validateImage(image: string | null | undefined): string | null {
  if (image === null || image === undefined) return null;
  const match = image.length <= MAX_REFERENCE ? REFERENCE_RE.exec(image) : null;
  if (!match || match[1].length > MAX_NAME) throw ValidationFailed.field('image', IMAGE_RULE);
  return image;
}
