import type { RangeContent } from './memoryApi';

/** The words a summary request starts with (the local model server's rules match on them in tests). */
export const SUMMARY_INSTRUCTION = 'Summarise the conversation excerpt below';

export const SUMMARY_SYSTEM =
  'You keep the long-term memory of AI coding agents. Write dense, factual summaries another agent can rely on later: ' +
  'decisions and their reasons, facts learned, files, identifiers and commands named, errors met, and what was left open. ' +
  'No preamble, no speculation, plain text.';

export interface SummaryPromptOptions {
  /** One message's text beyond this is cut with a marker. @default 2000 */
  perMessageChars?: number;
  /** The whole excerpt beyond this keeps its start and end and drops the middle, with a marker. @default 60000 */
  maxChars?: number;
  /** The summary's length the model is asked for. @default 200 */
  maxWords?: number;
}

/** The request a range's summary is written from: what the excerpt is, then its messages `[seq] role: text`. */
export function summaryPrompt(content: RangeContent, range: { fromSeq: number; toSeq: number }, opts: SummaryPromptOptions = {}): { system: string; user: string } {
  const perMessage = opts.perMessageChars ?? 2000;
  const maxChars = opts.maxChars ?? 60_000;
  const lines = content.messages.map((m) => {
    const text = m.content.length > perMessage ? `${m.content.slice(0, perMessage)} … [${m.content.length - perMessage} more characters]` : m.content;
    return `[${m.seq}] ${m.role}: ${text}`;
  });
  let excerpt = lines.join('\n');
  if (excerpt.length > maxChars) {
    const half = Math.floor(maxChars / 2);
    excerpt = `${excerpt.slice(0, half)}\n… [${excerpt.length - 2 * half} characters of the excerpt left out] …\n${excerpt.slice(-half)}`;
  }
  const header =
    `${SUMMARY_INSTRUCTION} (messages ${range.fromSeq}–${range.toSeq} of session ${content.sessionKey}, agent ${content.agent}` +
    `${content.channel ? `, channel ${content.channel}` : ''}) for long-term memory, in at most ${opts.maxWords ?? 200} words.`;
  return { system: SUMMARY_SYSTEM, user: `${header}\n\n${excerpt}` };
}
