/**
 * The token of the start-up URL (`/#token=kmt_…`): the fragment never leaves the browser. It is kept
 * for this tab only (sessionStorage) and dropped from the address bar, so a copied URL, a bookmark or
 * a screenshot does not carry it.
 */
export function takeToken(location: Pick<Location, 'hash' | 'pathname' | 'search'>, history: Pick<History, 'replaceState'>, storage: Storage): string | null {
  const fromFragment = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromFragment) {
    storage.setItem('keelson-token', fromFragment);
    history.replaceState(null, '', location.pathname + location.search);
  }
  return storage.getItem('keelson-token');
}
