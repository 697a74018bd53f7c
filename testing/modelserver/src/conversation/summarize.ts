import type { Conversation, Entry, Protocol, ConversationToolSpec } from './conversation';
import { cleanUserText, findCwd, isInjected } from './userText';

export interface SummarizeInput {
  protocol: Protocol;
  model: string;
  system: string[];
  entries: Entry[];
  tools: ConversationToolSpec[];
}

/**
 * Finds the last real user text (walking back past injected context and tool results) and the tool
 * results that came after it. A run of consecutive results counts as one round.
 */
export function summarize(input: SummarizeInput): Conversation {
  const names = new Map<string, string>();
  for (const entry of input.entries) {
    if (entry.kind === 'assistant') for (const call of entry.toolCalls) names.set(call.id, call.name);
  }

  let userText = '';
  let userAt = -1;
  for (let i = input.entries.length - 1; i >= 0 && userAt < 0; i--) {
    const entry = input.entries[i];
    if (entry.kind !== 'user') continue;
    const real = entry.texts.filter((t) => !isInjected(t)).map(cleanUserText);
    if (real.length > 0) {
      userText = real.join('\n');
      userAt = i;
    }
  }

  const earlierUserTexts: string[] = [];
  for (const entry of input.entries.slice(0, Math.max(0, userAt))) {
    if (entry.kind !== 'user') continue;
    const real = entry.texts.filter((t) => !isInjected(t)).map(cleanUserText);
    if (real.length > 0) earlierUserTexts.push(real.join('\n'));
  }

  const toolResults: Conversation['toolResults'] = [];
  let toolRounds = 0;
  let inRun = false;
  for (const entry of input.entries.slice(userAt + 1)) {
    if (entry.kind === 'toolResult') {
      toolResults.push({ callId: entry.callId, toolName: names.get(entry.callId), output: entry.output });
      if (!inRun) toolRounds++;
      inRun = true;
    } else if (entry.kind === 'assistant') {
      inRun = false;
    }
  }

  const allTexts = [...input.system, ...input.entries.flatMap((e) => (e.kind === 'user' ? e.texts : []))];
  return {
    protocol: input.protocol,
    model: input.model,
    system: input.system.join('\n\n'),
    userText,
    earlierUserTexts,
    toolResults,
    toolRounds,
    tools: input.tools,
    cwd: findCwd(allTexts),
  };
}

/** The text of a content value that is either a string or a list of typed parts with `text`. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : ''))
      .filter((t) => t !== '')
      .join('\n');
  }
  if (content == null) return '';
  return JSON.stringify(content);
}
