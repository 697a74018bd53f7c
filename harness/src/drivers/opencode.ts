import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DriverEvent, SessionSummary, TranscriptEntry } from '../contract';
import { formatSessionId, isNativeIdOf } from '../ids';
import { captureCommand } from '../process/capture';
import { clipJson, clipText, toolResultText, promptTitleOf } from './clip';
import { arr, CliDriver, rec, stringOrUndefined, type DriverFeatures, type MappedOutput, type OutputMapper, type TurnCommand, type TurnResult, type TurnSpec } from './cliDriver';

const PROVIDER = 'keelson';

interface SessionRow {
  id: string;
  directory: string | null;
  title: string | null;
  time_created: number | null;
  time_updated: number | null;
}

/**
 * opencode (`opencode-ai`). Headless: `opencode run --format json [-s <ses_id>] -- <text>` with
 * `$XDG_CONFIG_HOME/opencode/opencode.json` declaring an `@ai-sdk/openai-compatible` provider at
 * the model endpoint, edits allowed and `external_directory` denied (writes outside the working
 * directory are refused by opencode itself). It cannot pin a new id (`ses_…` is minted; read from
 * `sessionID` on every output line). Its store is SQLite under `$XDG_DATA_HOME/opencode`: sessions
 * are listed with `opencode db` (a read-only SELECT) and read with `opencode export <id>`.
 */
export class OpencodeDriver extends CliDriver {
  readonly harnessId = 'opencode' as const;
  readonly displayName = 'opencode';
  readonly binary = { command: 'opencode', npm: { pkg: 'opencode-ai', bin: 'opencode' } };
  readonly features: DriverFeatures = {
    pinning: 'none',
    approvals: false,
    attachments: false,
    reasons: {
      startSession: 'opencode cannot pin a new session id (it mints ses_… ids); start one with runTask or adopt a native session with resumeSession',
      approvals: 'opencode run applies its permission rules (allow/deny) without reporting a request',
      attachments: 'not wired for opencode run',
    },
  };
  /** `opencode run --variant` (the provider's reasoning variants). */
  override readonly efforts = ['low', 'medium', 'high', 'max'];
  /** opencode runs only the models its config file declares (one: the mesh's). */
  protected override readonly declaredModelsOnly = true;

  override models(): string[] {
    return [this.model];
  }
  private cache: { at: number; rows: Promise<SessionRow[]> } | undefined;
  /** `opencode export` costs seconds: pages of one transcript read in a burst share one export. */
  private readonly exports = new Map<string, { at: number; entries: Promise<TranscriptEntry[]> }>();

  private get configHome(): string {
    return join(this.root, 'config');
  }

  private get model(): string {
    return this.settings.model ?? 'keelson-scripted';
  }

  protected async writeConfig(): Promise<void> {
    const dir = join(this.configHome, 'opencode');
    await mkdir(dir, { recursive: true });
    for (const d of ['data', 'state', 'cache']) await mkdir(join(this.root, d), { recursive: true });
    const config = {
      $schema: 'https://opencode.ai/config.json',
      provider: {
        [PROVIDER]: {
          npm: '@ai-sdk/openai-compatible',
          name: 'Keelson',
          options: { baseURL: this.openaiBaseUrl() ?? 'https://api.openai.com/v1', apiKey: this.settings.apiKey },
          models: { [this.model]: { name: this.model, tool_call: true } },
        },
      },
      model: `${PROVIDER}/${this.model}`,
      small_model: `${PROVIDER}/${this.model}`,
      autoupdate: false,
      share: 'disabled',
      permission: { edit: 'allow', bash: 'allow', webfetch: 'deny', external_directory: 'deny' },
    };
    await writeFile(join(dir, 'opencode.json'), `${JSON.stringify(config, null, 2)}\n`);
  }

  private env(extra: Record<string, string> = {}): Record<string, string> {
    const env = this.baseEnv({ nativeId: null, fresh: false, cwd: this.homeDir, text: '', attachments: [], allowTools: [], env: extra });
    Object.assign(env, {
      XDG_CONFIG_HOME: this.configHome,
      XDG_DATA_HOME: join(this.root, 'data'),
      XDG_STATE_HOME: join(this.root, 'state'),
      XDG_CACHE_HOME: join(this.root, 'cache'),
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      OPENCODE_DISABLE_SHARE: '1',
    });
    return env;
  }

  async command(binary: string, spec: TurnSpec): Promise<TurnCommand> {
    const argv = [binary, 'run', '--format', 'json'];
    if (spec.model) argv.push('-m', `${PROVIDER}/${spec.model}`);
    if (spec.effort) argv.push('--variant', spec.effort);
    if (spec.nativeId) argv.push('-s', spec.nativeId);
    argv.push('--', spec.text);
    return { argv, env: this.env(spec.env) };
  }

  mapper(): OutputMapper {
    return new OpencodeMapper();
  }

  /** Runs an opencode store command with the driver's isolated HOME. */
  private async run(args: string[]): Promise<string> {
    const bin = await this.requireBinary();
    await this.prepare();
    return captureCommand([bin.path, ...args], { cwd: this.homeDir, env: this.env() });
  }

  /** Session rows from opencode's SQLite (ids are shape-checked before they reach SQL). */
  private async rows(where = ''): Promise<SessionRow[]> {
    const out = await this.run(['db', `select id, directory, title, time_created, time_updated from session${where} order by time_updated desc`, '--format', 'json']);
    const text = out.slice(out.indexOf('['));
    try {
      return (JSON.parse(text) as SessionRow[]).filter((r) => isNativeIdOf(this.harnessId, r.id));
    } catch {
      return [];
    }
  }

  private summary(r: SessionRow): SessionSummary {
    let title = r.title;
    try {
      // The title model may answer JSON ({"title": …}).
      const parsed = JSON.parse(r.title ?? '') as { title?: unknown };
      if (typeof parsed.title === 'string') title = parsed.title;
    } catch {
      // plain text
    }
    return {
      sessionId: formatSessionId(this.harnessId, r.id),
      harnessId: this.harnessId,
      nativeId: r.id,
      cwd: r.directory,
      title: promptTitleOf(title),
      createdAt: r.time_created ? new Date(r.time_created) : null,
      updatedAt: r.time_updated ? new Date(r.time_updated) : null,
    };
  }

  /** Invalidates the short-lived listing cache (a turn just changed the store). */
  override touched(): void {
    this.cache = undefined;
    this.exports.clear();
  }

  async listNative(): Promise<SessionSummary[]> {
    // `opencode db` costs about a second: a burst of reads shares one.
    if (!this.cache || Date.now() - this.cache.at > 2000) {
      const rows = this.rows(' where parent_id is null');
      this.cache = { at: Date.now(), rows };
      rows.catch(() => (this.cache = undefined));
    }
    return (await this.cache.rows).map((r) => this.summary(r));
  }

  async findNative(nativeId: string): Promise<SessionSummary | null> {
    if (!isNativeIdOf(this.harnessId, nativeId)) return null;
    const [row] = await this.rows(` where id = '${nativeId}'`);
    return row ? this.summary(row) : null;
  }

  async hasNative(nativeId: string): Promise<boolean> {
    return (await this.findNative(nativeId)) !== null;
  }

  async transcript(nativeId: string): Promise<TranscriptEntry[]> {
    if (!isNativeIdOf(this.harnessId, nativeId)) return [];
    const cached = this.exports.get(nativeId);
    if (cached && Date.now() - cached.at < 3000) return cached.entries;
    const entries = this.exportTranscript(nativeId);
    this.exports.set(nativeId, { at: Date.now(), entries });
    entries.catch(() => this.exports.delete(nativeId));
    return entries;
  }

  private async exportTranscript(nativeId: string): Promise<TranscriptEntry[]> {
    let exported: { messages?: unknown[] };
    try {
      const out = await this.run(['export', nativeId]);
      exported = JSON.parse(out.slice(out.indexOf('{'))) as { messages?: unknown[] };
    } catch {
      return [];
    }
    const entries: TranscriptEntry[] = [];
    for (const m of arr(exported.messages).map(rec)) {
      const info = rec(m.info);
      const id = stringOrUndefined(info.id);
      if (!id) continue;
      const createdAt = typeof rec(info.time).created === 'number' ? new Date(rec(info.time).created as number) : null;
      const parts = arr(m.parts).map(rec);
      const text = parts.filter((p) => p.type === 'text' && !p.synthetic).map((p) => stringOrUndefined(p.text) ?? '').join('');
      const tools = parts.filter((p) => p.type === 'tool');
      const reasoning = parts.filter((p) => p.type === 'reasoning').map((p) => stringOrUndefined(p.text) ?? '').join('');
      if (info.role === 'user') {
        entries.push({ id, role: 'user', content: text, createdAt });
        continue;
      }
      if (text || tools.length || reasoning) {
        entries.push({
          id,
          role: 'assistant',
          content: text,
          toolCalls: tools.length ? tools.map((p) => ({ id: stringOrUndefined(p.callID) ?? '', name: stringOrUndefined(p.tool) ?? '', input: clipJson(rec(p.state).input).value })) : null,
          createdAt,
          metadata: reasoning ? { reasoning } : null,
        });
      }
      for (const p of tools) {
        const state = rec(p.state);
        if (state.status !== 'completed' && state.status !== 'error') continue;
        entries.push({
          id: stringOrUndefined(p.id) ?? `${id}:${String(p.callID)}`,
          role: 'tool',
          content: toolResultText(state.output ?? state.error ?? ''),
          createdAt,
          metadata: { toolUseIds: [stringOrUndefined(p.callID)], isError: state.status === 'error' },
        });
      }
    }
    return entries;
  }
}

/** `opencode run --format json`: parts (`step_start`, `text`, `reasoning`, `tool_use`, `step_finish`, `error`), `sessionID` on every line. */
export class OpencodeMapper implements OutputMapper {
  private error: string | null = null;
  private lastText: string | null = null;

  line(v: Record<string, unknown>): MappedOutput {
    const nativeId = stringOrUndefined(v.sessionID);
    const part = rec(v.part);
    const events: DriverEvent[] = [];
    switch (v.type) {
      case 'text': {
        const raw = stringOrUndefined(part.text) ?? '';
        if (raw) {
          this.lastText = raw;
          const { text, truncated } = clipText(raw);
          events.push({ type: 'ASSISTANT_DELTA', text, messageId: stringOrUndefined(part.messageID) ?? null, ...(truncated ? { truncated } : {}) });
        }
        break;
      }
      case 'reasoning': {
        const { text, truncated } = clipText(stringOrUndefined(part.text) ?? '');
        if (text) events.push({ type: 'REASONING_DELTA', text, ...(truncated ? { truncated } : {}) });
        break;
      }
      case 'tool_use': {
        const state = rec(part.state);
        const id = stringOrUndefined(part.callID) ?? stringOrUndefined(part.id) ?? '';
        const input = clipJson(state.input);
        events.push({ type: 'TOOL_USE', toolUseId: id, name: stringOrUndefined(part.tool) ?? 'unknown', input: input.value, ...(input.truncated ? { truncated: true } : {}) });
        if (state.status === 'completed' || state.status === 'error') {
          const { text, truncated } = clipText(toolResultText(state.status === 'error' ? state.error : state.output));
          events.push({ type: 'TOOL_RESULT', toolUseId: id, output: text, isError: state.status === 'error', ...(truncated ? { truncated } : {}) });
        }
        break;
      }
      case 'error': {
        const err = rec(v.error);
        this.error = stringOrUndefined(rec(err.data).message) ?? stringOrUndefined(err.message) ?? stringOrUndefined(err.name) ?? 'opencode reported an error';
        events.push({ type: 'HARNESS_ERROR', code: 'CLI_ERROR', message: clipText(this.error).text });
        break;
      }
      default:
        break;
    }
    return { events, ...(nativeId ? { nativeId } : {}) };
  }

  /** opencode prints no result line: the turn's outcome is its exit plus any error seen. */
  finish(): TurnResult {
    return { ok: this.error === null, text: this.lastText, error: this.error };
  }
}
