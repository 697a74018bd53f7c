import { mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MeshError } from '@keelson/schema';
import type { DriverEvent, SessionSummary, TranscriptEntry } from '../contract';
import { confinedPath } from '../confine';
import { formatSessionId } from '../ids';
import { readJsonlHead } from '../stores/jsonl';
import { JsonlStoreDriver } from './jsonlStore';
import { clipJson, clipText, toolResultText, promptTitleOf } from './clip';
import { arr, EMPTY, rec, stringOrUndefined, type DriverFeatures, type MappedOutput, type OutputMapper, type TurnCommand, type TurnSpec } from './cliDriver';

const PROVIDER = 'keelson';

/**
 * pi (`@mariozechner/pi-coding-agent`). Headless: `pi -p --mode json --provider keelson --model
 * <m> --session <file>` with the provider declared in `$PI_CODING_AGENT_DIR/models.json`
 * (`openai-completions` at the model endpoint). pi has no permission gate at all (its tools always
 * run; the turn's cwd is its only confinement). A new session is pinned **by file path**: the mesh
 * writes the session file's header with the id it chose, and every turn passes that file.
 * Attachments are pi's `@file` arguments. Sessions live in `$PI_CODING_AGENT_DIR/sessions/<cwd>/`.
 */
export class PiDriver extends JsonlStoreDriver {
  readonly harnessId = 'pi' as const;
  readonly displayName = 'pi';
  readonly binary = { command: 'pi', npm: { pkg: '@mariozechner/pi-coding-agent', bin: 'pi' } };
  readonly features: DriverFeatures = {
    pinning: 'file-path',
    approvals: false,
    attachments: true,
    reasons: { approvals: 'pi has no permission gate: its tools run without asking' },
  };
  /** `pi --thinking`. */
  override readonly efforts = ['off', 'minimal', 'low', 'medium', 'high', 'xhigh'];
  /** pi runs only the models `models.json` declares (one: the mesh's). */
  protected override readonly declaredModelsOnly = true;

  override models(): string[] {
    return [this.model];
  }

  get agentDir(): string {
    return join(this.root, 'agent');
  }

  private get sessionsDir(): string {
    return join(this.agentDir, 'sessions');
  }

  private get model(): string {
    return this.settings.model ?? 'keelson-scripted';
  }

  protected async writeConfig(): Promise<void> {
    await mkdir(this.sessionsDir, { recursive: true });
    const models = {
      providers: {
        [PROVIDER]: {
          baseUrl: this.openaiBaseUrl() ?? 'https://api.openai.com/v1',
          api: 'openai-completions',
          apiKey: this.settings.apiKey,
          models: [{ id: this.model }],
        },
      },
    };
    await writeFile(join(this.agentDir, 'models.json'), `${JSON.stringify(models, null, 2)}\n`);
  }

  /** pi's own folder name for a cwd: `--<path with / as ->--`. */
  private slug(cwd: string): string {
    return `--${cwd.replace(/^\/+/, '').replace(/[/\\:]/g, '-')}--`;
  }

  override async pin(nativeId: string, cwd: string): Promise<void> {
    await this.prepare();
    if (await this.fileOf(nativeId)) throw new MeshError('CONFLICT', `pi session ${nativeId} already exists`);
    const now = new Date();
    const dir = join(this.sessionsDir, this.slug(cwd));
    await mkdir(dir, { recursive: true });
    const file = await confinedPath(this.sessionsDir, join(dir, `${now.toISOString().replace(/[:.]/g, '-')}_${nativeId}.jsonl`), 'pi session file');
    const header = { type: 'session', version: 3, id: nativeId, timestamp: now.toISOString(), cwd };
    await writeFile(file, `${JSON.stringify(header)}\n`, { flag: 'wx' });
  }

  async command(binary: string, spec: TurnSpec): Promise<TurnCommand> {
    const env = this.baseEnv(spec);
    Object.assign(env, { PI_CODING_AGENT_DIR: this.agentDir, PI_OFFLINE: '1', PI_SKIP_VERSION_CHECK: '1', PI_TELEMETRY: '0' });
    const argv = [binary, '-p', '--mode', 'json', '--provider', PROVIDER, '--model', spec.model ?? this.model];
    if (spec.effort) argv.push('--thinking', spec.effort);
    if (spec.nativeId) {
      const file = await this.fileOf(spec.nativeId);
      if (file) argv.push('--session', file);
    }
    for (const path of spec.attachments) argv.push(`@${path}`);
    // pi reads a leading `-` as an option and a leading `@` as a file; a space keeps the text a message.
    argv.push(/^[-@]/.test(spec.text) ? ` ${spec.text}` : spec.text);
    return { argv, env };
  }

  mapper(): OutputMapper {
    return new PiMapper();
  }

  protected get storeDir(): string {
    return this.sessionsDir;
  }

  protected nativeIdOfFile(name: string): string | null {
    return /_([0-9a-f-]{36})\.jsonl$/.exec(name)?.[1] ?? null;
  }

  protected async summarize(nativeId: string, file: string): Promise<SessionSummary> {
    const head = await readJsonlHead(this.sessionsDir, file);
    const header = head.find((r) => r.type === 'session');
    const prompt = head.map((r) => rec(r.message)).find((m) => m.role === 'user');
    const st = await stat(file).catch(() => null);
    return {
      sessionId: formatSessionId(this.harnessId, nativeId),
      harnessId: this.harnessId,
      nativeId,
      cwd: stringOrUndefined(header?.cwd) ?? null,
      title: promptTitleOf(prompt ? toolResultText(prompt.content) : null),
      createdAt: stringOrUndefined(header?.timestamp) ? new Date(header!.timestamp as string) : null,
      updatedAt: st?.mtime ?? null,
    };
  }

  protected entriesOf(records: Record<string, unknown>[]): TranscriptEntry[] {
    const entries: TranscriptEntry[] = [];
    const seen = new Set<string>();
    for (const r of records) {
      if (r.type !== 'message' || !stringOrUndefined(r.id) || seen.has(r.id as string)) continue;
      seen.add(r.id as string);
      const m = rec(r.message);
      const createdAt = stringOrUndefined(r.timestamp) ? new Date(r.timestamp as string) : null;
      const blocks = arr(m.content).map(rec);
      if (m.role === 'user') {
        entries.push({ id: r.id as string, role: 'user', content: toolResultText(m.content), createdAt });
      } else if (m.role === 'assistant') {
        const text = blocks.filter((b) => b.type === 'text').map((b) => stringOrUndefined(b.text) ?? '').join('');
        const calls = blocks.filter((b) => b.type === 'toolCall').map((b) => ({ id: stringOrUndefined(b.id) ?? '', name: stringOrUndefined(b.name) ?? '', input: clipJson(b.arguments).value }));
        const thinking = blocks.filter((b) => b.type === 'thinking').map((b) => stringOrUndefined(b.thinking) ?? '').join('');
        entries.push({
          id: r.id as string,
          role: 'assistant',
          content: text,
          toolCalls: calls.length ? calls : null,
          createdAt,
          metadata: thinking || m.errorMessage ? { reasoning: thinking || undefined, error: stringOrUndefined(m.errorMessage) } : null,
        });
      } else if (m.role === 'toolResult') {
        entries.push({ id: r.id as string, role: 'tool', content: toolResultText(m.content), createdAt, metadata: { toolUseIds: [stringOrUndefined(m.toolCallId)], isError: m.isError === true } });
      }
    }
    return entries;
  }
}

/** `pi --mode json`: a session header, agent/turn/message lifecycle, tool executions, agent_end. */
export class PiMapper implements OutputMapper {
  private error: string | null = null;
  private lastText: string | null = null;

  line(v: Record<string, unknown>): MappedOutput {
    switch (v.type) {
      case 'session':
        return stringOrUndefined(v.id) ? { events: [], nativeId: stringOrUndefined(v.id) } : EMPTY;
      case 'message_update': {
        const e = rec(v.assistantMessageEvent);
        if (e.type === 'text_delta' && stringOrUndefined(e.delta)) {
          const { text, truncated } = clipText(e.delta as string);
          return { events: [{ type: 'ASSISTANT_DELTA', text, ...(truncated ? { truncated } : {}) }] };
        }
        if (e.type === 'thinking_delta' && stringOrUndefined(e.delta)) {
          const { text, truncated } = clipText(e.delta as string);
          return { events: [{ type: 'REASONING_DELTA', text, ...(truncated ? { truncated } : {}) }] };
        }
        return EMPTY;
      }
      case 'message_end': {
        const m = rec(v.message);
        if (m.role !== 'assistant') return EMPTY;
        const text = arr(m.content).map(rec).filter((b) => b.type === 'text').map((b) => stringOrUndefined(b.text) ?? '').join('');
        if (text) this.lastText = text;
        if (m.stopReason === 'error' || m.stopReason === 'aborted') {
          this.error = stringOrUndefined(m.errorMessage) ?? `the model call ended with ${String(m.stopReason)}`;
          return { events: [{ type: 'HARNESS_ERROR', code: 'MODEL_ERROR', message: clipText(this.error).text }] };
        }
        return EMPTY;
      }
      case 'tool_execution_start': {
        const input = clipJson(v.args);
        const event: DriverEvent = { type: 'TOOL_USE', toolUseId: stringOrUndefined(v.toolCallId) ?? '', name: stringOrUndefined(v.toolName) ?? 'unknown', input: input.value, ...(input.truncated ? { truncated: true } : {}) };
        return { events: [event] };
      }
      case 'tool_execution_end': {
        const { text, truncated } = clipText(toolResultText(rec(v.result).content ?? v.result));
        return { events: [{ type: 'TOOL_RESULT', toolUseId: stringOrUndefined(v.toolCallId) ?? '', output: text, isError: v.isError === true, ...(truncated ? { truncated } : {}) }] };
      }
      case 'agent_end':
        return { events: [], result: this.error ? { ok: false, text: this.lastText, error: this.error } : { ok: true, text: this.lastText } };
      default:
        return EMPTY;
    }
  }
}
