const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a canonical UUID string (anything else cannot name a row keyed by uuid). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
