import { mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DriverEvent, SessionSummary, TranscriptEntry } from '../contract';
import { listDir } from '../confine';
import { formatSessionId, isNativeIdOf } from '../ids';
import { readJsonl, readJsonlHead } from '../stores/jsonl';
import { clipJson, clipText, toolResultText, promptTitleOf } from './clip';
import { arr, CliDriver, EMPTY, rec, stringOrUndefined, type DriverFeatures, type MappedOutput, type OutputMapper, type TurnCommand, type TurnSpec } from './cliDriver';

/** TOML basic string. */
function toml(s: string): string {
  return JSON.stringify(s);
}

/** Context codex injects as user messages: not what the user said. */
const INJECTED = /^(<environment_context>|<user_instructions>|<skills_instructions>|# AGENTS\.md instructions)/;

/**
 * codex (`@openai/codex`). Headless: `codex exec --json --skip-git-repo-check` (resume:
 * `codex exec … resume <thread-id>`), with `$CODEX_HOME/config.toml` pointing a `keelson` provider
 * (Responses API) at the model endpoint and `approval_policy = "never"`. Its own sandbox: the mesh's
 * bubblewrap sandbox confines the whole CLI, so each turn passes `-c sandbox_mode="danger-full-access"`
 * (no second sandbox nested inside; see the harness README, "codex and bubblewrap"); with
 * KEELSON_SANDBOX=off the config's `sandbox_mode = "workspace-write"` applies. It cannot pin a new
 * id: the thread id is read from `thread.started`. Transcripts are
 * `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<thread-id>.jsonl`.
 */
export class CodexDriver extends CliDriver {
  readonly harnessId = 'codex' as const;
  readonly displayName = 'Codex';
  readonly binary = { command: 'codex', npm: { pkg: '@openai/codex', bin: 'codex' } };
  readonly features: DriverFeatures = {
    pinning: 'none',
    approvals: false,
    attachments: false,
    reasons: {
      startSession: 'codex cannot pin a new session id (it mints its thread id); start one with runTask or adopt a native session with resumeSession',
      approvals: 'codex exec runs with approval_policy "never" inside the mesh\'s sandbox: it reports no approval request',
      attachments: 'codex exec attaches images only',
    },
  };
  /** `-c model_reasoning_effort=…`. */
  override readonly efforts = ['low', 'medium', 'high', 'xhigh'];

  /** The configured model (codex's default `gpt-5.5` when none); `-m` takes any the provider serves. */
  override models(): string[] {
    return [this.settings.model ?? 'gpt-5.5'];
  }

  get codexHome(): string {
    return join(this.root, 'codex');
  }

  private get sessionsDir(): string {
    return join(this.codexHome, 'sessions');
  }

  protected async writeConfig(): Promise<void> {
    await mkdir(this.codexHome, { recursive: true });
    const base = this.openaiBaseUrl();
    const lines = [
      '# Written by Keelson Mesh for headless turns; rewritten at start.',
      `model = ${toml(this.settings.model ?? 'gpt-5.5')}`,
      'approval_policy = "never"',
      'sandbox_mode = "workspace-write"',
    ];
    if (base) {
      lines.push('model_provider = "keelson"', '', '[model_providers.keelson]', 'name = "keelson"', `base_url = ${toml(base)}`, 'env_key = "KEELSON_MODEL_API_KEY"', 'wire_api = "responses"', 'request_max_retries = 0', 'stream_max_retries = 0');
    }
    lines.push('', '[analytics]', 'enabled = false', '', '[feedback]', 'enabled = false', '');
    await writeFile(join(this.codexHome, 'config.toml'), lines.join('\n'));
  }

  async command(binary: string, spec: TurnSpec): Promise<TurnCommand> {
    const env = this.baseEnv(spec);
    env.CODEX_HOME = this.codexHome;
    env.KEELSON_MODEL_API_KEY = this.settings.apiKey;
    if (!this.settings.modelBaseUrl) env.OPENAI_API_KEY = this.settings.apiKey;
    const argv = [binary, 'exec', '--json', '--skip-git-repo-check'];
    // The mesh's sandbox replaces codex's own: nested, codex's would need a bwrap with --argv0 (0.9+).
    if (this.settings.sandbox.mode !== 'off') argv.push('-c', 'sandbox_mode="danger-full-access"');
    if (spec.model) argv.push('-m', spec.model);
    // One of `efforts` (checked), so a TOML string as it is.
    if (spec.effort) argv.push('-c', `model_reasoning_effort="${spec.effort}"`);
    if (spec.nativeId) argv.push('resume', spec.nativeId);
    argv.push('--', spec.text);
    return { argv, env };
  }

  mapper(): OutputMapper {
    return new CodexMapper();
  }

  private async fileOf(nativeId: string): Promise<string | null> {
    if (!isNativeIdOf(this.harnessId, nativeId)) return null;
    for (const file of await this.rolloutFiles()) if (file.endsWith(`-${nativeId}.jsonl`)) return file;
    return null;
  }

  /** Every rollout file, newest day first. */
  private async rolloutFiles(): Promise<string[]> {
    const out: string[] = [];
    for (const y of (await listDir(this.sessionsDir, 'dir')).reverse()) {
      for (const m of (await listDir(join(this.sessionsDir, y), 'dir')).reverse()) {
        for (const d of (await listDir(join(this.sessionsDir, y, m), 'dir')).reverse()) {
          for (const f of await listDir(join(this.sessionsDir, y, m, d), 'file')) {
            if (f.startsWith('rollout-') && f.endsWith('.jsonl')) out.push(join(this.sessionsDir, y, m, d, f));
          }
        }
      }
    }
    return out;
  }

  async hasNative(nativeId: string): Promise<boolean> {
    return (await this.fileOf(nativeId)) !== null;
  }

  private async summarize(file: string): Promise<SessionSummary | null> {
    const head = await readJsonlHead(this.sessionsDir, file);
    const meta = rec(head.find((r) => r.type === 'session_meta')?.payload);
    const nativeId = stringOrUndefined(meta.id) ?? file.slice(-42, -6);
    if (!isNativeIdOf(this.harnessId, nativeId)) return null;
    const prompt = head.map((r) => rec(r.payload)).find((p) => p.type === 'message' && p.role === 'user' && !INJECTED.test(toolResultText(arr(p.content).map(rec))));
    const st = await stat(file).catch(() => null);
    return {
      sessionId: formatSessionId(this.harnessId, nativeId),
      harnessId: this.harnessId,
      nativeId,
      cwd: stringOrUndefined(meta.cwd) ?? null,
      title: promptTitleOf(prompt ? toolResultText(arr(prompt.content)) : null),
      createdAt: stringOrUndefined(meta.timestamp) ? new Date(meta.timestamp as string) : null,
      updatedAt: st?.mtime ?? null,
    };
  }

  async listNative(): Promise<SessionSummary[]> {
    const out: SessionSummary[] = [];
    for (const file of await this.rolloutFiles()) {
      const s = await this.summarize(file);
      if (s) out.push(s);
    }
    return out;
  }

  async findNative(nativeId: string): Promise<SessionSummary | null> {
    const file = await this.fileOf(nativeId);
    return file ? this.summarize(file) : null;
  }

  async transcript(nativeId: string): Promise<TranscriptEntry[]> {
    const file = await this.fileOf(nativeId);
    if (!file) return [];
    const entries: TranscriptEntry[] = [];
    for (const r of await readJsonl(this.sessionsDir, file)) {
      if (r.type !== 'response_item') continue;
      const p = rec(r.payload);
      const createdAt = stringOrUndefined(r.timestamp) ? new Date(r.timestamp as string) : null;
      const id = stringOrUndefined(p.id) ?? (stringOrUndefined(p.call_id) ? `${p.type}:${p.call_id}` : `ordinal:${String(r.ordinal)}`);
      if (p.type === 'message') {
        if (p.role !== 'user' && p.role !== 'assistant') continue;
        const content = toolResultText(arr(p.content));
        if (p.role === 'user' && INJECTED.test(content)) continue;
        entries.push({ id, role: p.role, content, createdAt });
      } else if (p.type === 'function_call' || p.type === 'custom_tool_call') {
        let input: unknown = p.type === 'custom_tool_call' ? p.input : p.arguments;
        if (typeof input === 'string' && p.type === 'function_call') {
          try {
            input = JSON.parse(input);
          } catch {
            // keep the text
          }
        }
        entries.push({ id, role: 'assistant', content: '', toolCalls: [{ id: stringOrUndefined(p.call_id) ?? id, name: stringOrUndefined(p.name) ?? 'unknown', input: clipJson(input).value }], createdAt });
      } else if (p.type === 'function_call_output' || p.type === 'custom_tool_call_output') {
        const out = typeof p.output === 'string' ? p.output : toolResultText(rec(p.output).content ?? p.output);
        entries.push({ id, role: 'tool', content: out, createdAt, metadata: { toolUseIds: [stringOrUndefined(p.call_id)] } });
      }
    }
    return entries;
  }
}

/** `codex exec --json`: thread/turn/item events. Item ids repeat per turn; the event's turn id disambiguates. */
export class CodexMapper implements OutputMapper {
  private readonly started = new Set<string>();
  private lastMessage: string | null = null;

  line(v: Record<string, unknown>): MappedOutput {
    switch (v.type) {
      case 'thread.started':
        return stringOrUndefined(v.thread_id) ? { events: [], nativeId: stringOrUndefined(v.thread_id) } : EMPTY;
      case 'item.started':
        return { events: this.toolUse(rec(v.item)) };
      case 'item.completed':
        return { events: this.completed(rec(v.item)) };
      case 'turn.completed':
        return { events: [], result: { ok: true, text: this.lastMessage } };
      case 'turn.failed':
        return { events: [], result: { ok: false, text: this.lastMessage, error: stringOrUndefined(rec(v.error).message) ?? 'the turn failed' } };
      case 'error':
        return { events: [{ type: 'HARNESS_ERROR', code: 'CLI_ERROR', message: clipText(stringOrUndefined(v.message) ?? JSON.stringify(v)).text }] };
      default:
        return EMPTY;
    }
  }

  private toolUse(item: Record<string, unknown>): DriverEvent[] {
    const id = stringOrUndefined(item.id) ?? '';
    let name: string;
    let input: unknown;
    switch (item.type) {
      case 'command_execution':
        name = 'shell';
        input = { command: item.command };
        break;
      case 'file_change':
        name = 'apply_patch';
        input = { changes: item.changes };
        break;
      case 'mcp_tool_call':
        name = `${stringOrUndefined(item.server) ?? 'mcp'}.${stringOrUndefined(item.tool) ?? 'tool'}`;
        input = item.arguments;
        break;
      case 'web_search':
        name = 'web_search';
        input = { query: item.query };
        break;
      default:
        return [];
    }
    if (this.started.has(id)) return [];
    this.started.add(id);
    const clipped = clipJson(input);
    return [{ type: 'TOOL_USE', toolUseId: id, name, input: clipped.value, ...(clipped.truncated ? { truncated: true } : {}) }];
  }

  private completed(item: Record<string, unknown>): DriverEvent[] {
    const id = stringOrUndefined(item.id) ?? '';
    switch (item.type) {
      case 'agent_message': {
        this.lastMessage = stringOrUndefined(item.text) ?? null;
        const { text, truncated } = clipText(this.lastMessage ?? '');
        return text ? [{ type: 'ASSISTANT_DELTA', text, messageId: id, ...(truncated ? { truncated } : {}) }] : [];
      }
      case 'reasoning': {
        const { text, truncated } = clipText(stringOrUndefined(item.text) ?? '');
        return text ? [{ type: 'REASONING_DELTA', text, ...(truncated ? { truncated } : {}) }] : [];
      }
      case 'command_execution':
      case 'file_change':
      case 'mcp_tool_call':
      case 'web_search': {
        const events = this.toolUse(item);
        const failed = item.status === 'failed' || (typeof item.exit_code === 'number' && item.exit_code !== 0) || item.error != null;
        const output =
          item.type === 'command_execution'
            ? stringOrUndefined(item.aggregated_output) ?? ''
            : item.type === 'file_change'
              ? arr(item.changes).map((c) => `${stringOrUndefined(rec(c).kind) ?? 'change'} ${stringOrUndefined(rec(c).path) ?? ''}`).join('\n')
              : toolResultText(rec(item.result).content ?? item.error ?? '');
        const { text, truncated } = clipText(output);
        events.push({ type: 'TOOL_RESULT', toolUseId: id, output: text, isError: failed, ...(truncated ? { truncated } : {}) });
        return events;
      }
      case 'error':
        return [{ type: 'HARNESS_ERROR', code: 'CLI_ERROR', message: clipText(stringOrUndefined(item.message) ?? 'error').text }];
      default:
        return [];
    }
  }
}
