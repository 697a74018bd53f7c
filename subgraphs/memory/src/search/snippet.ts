/** Characters of context kept before the match. */
const LEAD = 60;

/** Query terms worth locating, longest first. */
function terms(query: string): string[] {
  return [...new Set(query.toLowerCase().split(/[^\p{L}\p{N}_./-]+/u).filter((t) => t.length >= 3))].sort((a, b) => b.length - a.length);
}

/**
 * A one-line excerpt of `content` of at most `width` characters (plus ellipses) around where the
 * query matches: the whole query, else its longest term, else a stem-like prefix of a term, else the
 * start.
 */
export function snippet(content: string, query: string, width = 240): string {
  const text = content.replace(/\s+/g, ' ').trim();
  if (text.length <= width) return text;
  const lower = text.toLowerCase();
  let at = lower.indexOf(query.trim().toLowerCase());
  for (const term of terms(query)) {
    if (at >= 0) break;
    at = lower.indexOf(term);
    if (at < 0 && term.length > 5) at = lower.indexOf(term.slice(0, Math.max(4, term.length - 3)));
  }
  let start = Math.max(0, at - LEAD);
  const end = Math.min(text.length, start + width);
  start = Math.max(0, end - width);
  // Never start or end inside a surrogate pair.
  if (start > 0 && /[\uDC00-\uDFFF]/.test(text[start]!)) start += 1;
  const cut = end < text.length && /[\uD800-\uDBFF]/.test(text[end - 1]!) ? end - 1 : end;
  return `${start > 0 ? '…' : ''}${text.slice(start, cut).trim()}${cut < text.length ? '…' : ''}`;
}
