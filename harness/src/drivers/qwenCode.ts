import { mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SessionSummary, TranscriptEntry } from '../contract';
import { formatSessionId } from '../ids';
import { readJsonlHead } from '../stores/jsonl';
import { JsonlStoreDriver } from './jsonlStore';
import { clipJson, toolResultText, promptTitleOf } from './clip';
import { arr, rec, stringOrUndefined, type DriverFeatures, type TurnCommand, type TurnSpec } from './cliDriver';
import { StreamJsonMapper } from './streamJson';

/**
 * qwen-code (`@qwen-code/qwen-code`). Headless: `qwen --output-format stream-json
 * --include-partial-messages --approval-mode auto-edit --prompt=<text>` (auto-edit is the narrowest
 * mode that offers the write tools headless; default mode removes them). Auth type `openai` in
 * `~/.qwen/settings.json`, endpoint from `OPENAI_BASE_URL`. Pins with `--session-id`, resumes with
 * `--resume`; transcripts are `~/.qwen/projects/<cwd slug>/chats/<uuid>.jsonl`.
 */
export class QwenCodeDriver extends JsonlStoreDriver {
  readonly harnessId = 'qwen-code' as const;
  readonly displayName = 'Qwen Code';
  readonly binary = { command: 'qwen', npm: { pkg: '@qwen-code/qwen-code', bin: 'qwen' } };
  readonly features: DriverFeatures = {
    pinning: 'session-id',
    approvals: false,
    attachments: false,
    reasons: {
      approvals: 'qwen-code headless in auto-edit mode drops the tools it would ask about instead of reporting a request',
      attachments: 'qwen -p takes the prompt as text only',
    },
  };
  override readonly effortsReason = 'qwen-code sets reasoning per model in its settings; no flag or variable takes it per turn';

  /** The configured model (`OPENAI_MODEL`); the endpoint may serve others. */
  override models(): string[] {
    return [this.settings.model ?? 'keelson-scripted'];
  }

  private get qwenDir(): string {
    return join(this.homeDir, '.qwen');
  }

  private get projectsDir(): string {
    return join(this.qwenDir, 'projects');
  }

  protected async writeConfig(): Promise<void> {
    await mkdir(this.qwenDir, { recursive: true });
    const settings = {
      security: { auth: { selectedType: 'openai' } },
      privacy: { usageStatisticsEnabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
      telemetry: { enabled: false },
    };
    await writeFile(join(this.qwenDir, 'settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
  }

  async command(binary: string, spec: TurnSpec): Promise<TurnCommand> {
    const env = this.baseEnv(spec);
    env.OPENAI_API_KEY = this.settings.apiKey;
    env.OPENAI_MODEL = spec.model ?? this.settings.model ?? 'keelson-scripted';
    const base = this.openaiBaseUrl();
    if (base) env.OPENAI_BASE_URL = base;
    const argv = [binary, '--output-format', 'stream-json', '--include-partial-messages', '--approval-mode', 'auto-edit'];
    if (spec.nativeId) argv.push(spec.fresh ? '--session-id' : '--resume', spec.nativeId);
    argv.push(`--prompt=${spec.text}`);
    return { argv, env };
  }

  mapper(): StreamJsonMapper {
    return new StreamJsonMapper(false, 'ask_user_question');
  }

  protected get storeDir(): string {
    return this.projectsDir;
  }

  protected override readonly filesBelow = 'chats';

  protected nativeIdOfFile(name: string): string | null {
    return name.endsWith('.jsonl') ? name.slice(0, -'.jsonl'.length) : null;
  }

  protected async summarize(nativeId: string, file: string): Promise<SessionSummary> {
    const head = await readJsonlHead(this.projectsDir, file);
    const first = head.find((r) => stringOrUndefined(r.cwd));
    const prompt = head.find((r) => r.type === 'user');
    const st = await stat(file).catch(() => null);
    return {
      sessionId: formatSessionId(this.harnessId, nativeId),
      harnessId: this.harnessId,
      nativeId,
      cwd: stringOrUndefined(first?.cwd) ?? null,
      title: promptTitleOf(prompt ? toolResultText(arr(rec(prompt.message).parts)) : null),
      createdAt: stringOrUndefined(first?.timestamp) ? new Date(first!.timestamp as string) : null,
      updatedAt: st?.mtime ?? null,
    };
  }

  protected entriesOf(records: Record<string, unknown>[]): TranscriptEntry[] {
    const entries: TranscriptEntry[] = [];
    for (const r of records) {
      if (!stringOrUndefined(r.uuid)) continue;
      const parts = arr(rec(r.message).parts).map(rec);
      const createdAt = stringOrUndefined(r.timestamp) ? new Date(r.timestamp as string) : null;
      if (r.type === 'user') {
        entries.push({ id: r.uuid as string, role: 'user', content: parts.map((p) => stringOrUndefined(p.text) ?? '').join(''), createdAt });
      } else if (r.type === 'assistant') {
        const text = parts.filter((p) => !p.thought).map((p) => stringOrUndefined(p.text) ?? '').join('');
        const calls = parts.filter((p) => p.functionCall).map((p) => rec(p.functionCall)).map((c) => ({ id: stringOrUndefined(c.id) ?? '', name: stringOrUndefined(c.name) ?? '', input: clipJson(c.args).value }));
        const thinking = parts.filter((p) => p.thought).map((p) => stringOrUndefined(p.text) ?? '').join('');
        if (!text && !calls.length && !thinking) continue;
        entries.push({ id: r.uuid as string, role: 'assistant', content: text, toolCalls: calls.length ? calls : null, createdAt, metadata: thinking ? { reasoning: thinking } : null });
      } else if (r.type === 'tool_result') {
        const responses = parts.filter((p) => p.functionResponse).map((p) => rec(p.functionResponse));
        entries.push({
          id: r.uuid as string,
          role: 'tool',
          content: responses.map((fr) => toolResultText(rec(fr.response).output ?? rec(fr.response).error ?? fr.response)).join('\n'),
          createdAt,
          metadata: { toolUseIds: responses.map((fr) => stringOrUndefined(fr.id)) },
        });
      }
    }
    return entries;
  }
}
