/** The federation specs that carry authorization (`for: SECURITY`) and that this gateway enforces itself. */
const ENFORCED = ['https://specs.apollo.dev/authenticated/', 'https://specs.apollo.dev/requiresScopes/'];

/**
 * The supergraph as `@apollo/gateway` may load it. Apollo Gateway refuses a supergraph linking a
 * `for: SECURITY` feature it does not implement — rightly: it would run the operation unchecked.
 * This gateway checks `@authenticated` / `@requiresScopes` itself before planning (the scope
 * plugin and the subscription router), so those two links lose their `for: SECURITY` here and
 * nowhere else. Any other security feature keeps it, and Apollo Gateway still refuses it.
 */
export function supergraphForPlanning(sdl: string): string {
  return sdl.replace(/@link\(url: "([^"]+)"([^)]*?), for: SECURITY\)/g, (whole, url: string, rest: string) =>
    ENFORCED.some((prefix) => url.startsWith(prefix)) ? `@link(url: "${url}"${rest})` : whole,
  );
}
