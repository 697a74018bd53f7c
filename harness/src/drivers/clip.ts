import { HARNESS_EVENT_TEXT_LIMIT } from '@keelson/schema';

/** `s` cut to the event text limit, and whether it was cut. */
export function clipText(s: string, limit = HARNESS_EVENT_TEXT_LIMIT): { text: string; truncated: boolean } {
  const clean = s.includes('\u0000') ? s.replace(/\u0000/g, '\uFFFD') : s;
  return clean.length <= limit ? { text: clean, truncated: false } : { text: `${clean.slice(0, limit - 1)}…`, truncated: true };
}

/** A JSON value kept whole when small, else replaced by a cut preview of its text. */
export function clipJson(value: unknown, limit = HARNESS_EVENT_TEXT_LIMIT): { value: unknown; truncated: boolean } {
  let text: string;
  try {
    text = JSON.stringify(value ?? null);
  } catch {
    return { value: null, truncated: true };
  }
  if (text.length <= limit && !text.includes('\\u0000')) return { value: value ?? null, truncated: false };
  return { value: { preview: clipText(text, limit).text }, truncated: true };
}

/** Text of a tool result in any of the shapes the CLIs use (a string, text blocks, parts). */
export function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((c) => (typeof c === 'string' ? c : typeof (c as { text?: unknown })?.text === 'string' ? (c as { text: string }).text : ''))
      .filter(Boolean)
      .join('\n');
  }
  if (content && typeof content === 'object') return JSON.stringify(content);
  return content == null ? '' : String(content);
}

/** A one-line title from a first prompt. */
export function promptTitleOf(text: string | null | undefined): string | null {
  if (!text) return null;
  const line = text.replace(/\s+/g, ' ').trim();
  if (!line) return null;
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}
