/** A UUID's text (8-4-4-4-12 hex digits), unanchored, to compose into larger patterns. */
export const UUID_PATTERN = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const UUID = new RegExp(`^${UUID_PATTERN}$`, 'i');

/** True for a canonical UUID string (anything else cannot name a row keyed by uuid). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
