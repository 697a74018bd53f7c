import { MeshError } from '@keelson/schema';
import type { Places } from './places';
import type { SessionView } from './sessions';
import { HOST, type HarnessStore } from './store';
import type { Turns } from './turn';

export interface PromptsDeps {
  store: HarnessStore;
  places: Places;
  turns: Turns;
}

/** The turn text that carries an answer to the CLI (headless CLIs take it as the next user message). */
export function answerText(question: string, text: string): string {
  return `Answer to your question "${question}": ${text}`;
}

/**
 * Prompts: questions a CLI asked the user (qwen-code's `ask_user_question`), which a headless CLI
 * cannot wait for. `answerPrompt` runs the answer as the session's next turn and records it.
 */
export class Prompts {
  constructor(private readonly deps: PromptsDeps) {}

  /**
   * Runs the answer as the next turn, then records it (PROMPT_ANSWERED). Refused with nothing
   * changed while a turn is in flight (TURN_IN_FLIGHT), for an unknown prompt (NOT_FOUND) and for
   * one already answered (CONFLICT); an answer recorded by someone else meanwhile stops the turn
   * this call started.
   */
  async answer(view: SessionView, promptId: string, text: string): Promise<{ turnId: string }> {
    const { store, places, turns } = this.deps;
    const record = view.record;
    if (!record) throw new MeshError('NOT_FOUND', `session ${view.id} has no prompt ${promptId}`);
    const prompt = (await store.prompts(record.id)).find((p) => p.promptId === promptId);
    if (!prompt) throw new MeshError('NOT_FOUND', `session ${record.id} has no prompt ${promptId}`);
    if (prompt.status !== 'pending') throw new MeshError('CONFLICT', `prompt ${promptId} was already answered`);
    const cwd = await places.cwdOf(record);
    const turn = await turns.start(record, cwd, {
      text: answerText(prompt.question, text),
      attachments: [],
      allowTools: [],
      holder: `prompt:${HOST}:${process.pid}`,
      taskId: record.taskId,
    });
    turn.done.catch(() => undefined);
    try {
      await store.answerPrompt(record.id, promptId, text);
    } catch (err) {
      const current = await store.get(record.id);
      if (current) await turns.interruptSession(current).catch(() => undefined);
      throw err;
    }
    return { turnId: turn.turnId };
  }
}
