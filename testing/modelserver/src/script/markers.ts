import type { ReplySpec, Rule } from './rule';

// The marker protocol tests everywhere use: an uppercase word in the user's text decides the reply.
// Action markers take the rest of the text as their argument; modifiers apply to whatever answers.

const WRITE_FILE = /\bWRITE_FILE[ \t]+(\S+)(?:[ \t]+([\s\S]*))?$/;
const CALL_TOOL = /\bCALL_TOOL[ \t]+(\S+)(?:[ \t]+([\s\S]*))?$/;
const FAIL_HTTP = /\bFAIL_HTTP[ \t]+([45]\d\d)\b(?:[ \t]+([^\n]*))?/;
const SLOW = /\bSLOW[ \t]+(\d+)\b/;
const REASON = /\bREASON\b/;

/** `SLOW <ms>` and `REASON`, read from the user text; a reply's own fields win over them. */
export function markerModifiers(userText: string): Pick<ReplySpec, 'durationMs' | 'reasoning'> {
  const slow = SLOW.exec(userText);
  return {
    durationMs: slow ? Number(slow[1]) : undefined,
    reasoning: REASON.test(userText) ? `Reasoning about: ${userText.slice(0, 80)}` : undefined,
  };
}

/** The built-in rules, after any embedder or script rules: the markers, then an echo. */
export const builtinRules: Rule[] = [
  {
    name: 'marker:FAIL_HTTP',
    match: { regex: FAIL_HTTP.source },
    reply: ({ groups }) => ({ error: { status: Number(groups[1]), message: groups[2]?.trim() || `scripted failure ${groups[1]}` } }),
  },
  {
    name: 'marker:WRITE_FILE',
    match: { regex: WRITE_FILE.source },
    reply: ({ groups }) => ({ writeFile: { path: groups[1], content: (groups[2] ?? '').replace(/\s+$/, '') } }),
  },
  {
    name: 'marker:CALL_TOOL',
    match: { regex: CALL_TOOL.source },
    reply: ({ groups }) => {
      const raw = (groups[2] ?? '').trim();
      if (raw === '') return { toolCall: { name: groups[1], arguments: {} } };
      try {
        const parsed: unknown = JSON.parse(raw);
        if (typeof parsed === 'string') return { toolCall: { name: groups[1], arguments: parsed } };
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
          return { toolCall: { name: groups[1], arguments: parsed as Record<string, unknown> } };
        }
      } catch {
        // Not JSON: a freeform tool takes the text as it is; a function tool rejects it below.
      }
      return { toolCall: { name: groups[1], arguments: raw } };
    },
  },
  {
    name: 'default:echo',
    reply: ({ userText }) => ({ text: userText ? `ECHO ${userText}` : 'Hello from the Keelson model server.' }),
  },
];
