/**
 * The optional fields of an event's payload as a GraphQL object's nullable fields: each named
 * field's value, or null where the payload leaves it out (an event not about it, or written before
 * the field existed).
 */
export function payloadOrNull<P extends object, K extends keyof P>(payload: P, keys: readonly K[]): { [F in K]: NonNullable<P[F]> | null } {
  return Object.fromEntries(keys.map((k) => [k, payload[k] ?? null])) as { [F in K]: NonNullable<P[F]> | null };
}
