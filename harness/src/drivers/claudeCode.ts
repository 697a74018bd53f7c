import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { SessionSummary, TranscriptEntry } from '../contract';
import { formatSessionId } from '../ids';
import { readJsonlHead } from '../stores/jsonl';
import { JsonlStoreDriver } from './jsonlStore';
import { clipJson, toolResultText, promptTitleOf } from './clip';
import { arr, rec, stringOrUndefined, type DriverFeatures, type TurnCommand, type TurnSpec } from './cliDriver';
import { StreamJsonMapper } from './streamJson';

/** The MCP server and tool claude-code's `--permission-prompt-tool` names (the mesh's permission endpoint). */
export const PERMISSION_SERVER = 'keelson';
export const PERMISSION_TOOL = 'permission_prompt';
/** The child's variable holding the turn's permission secret (the MCP config names it, claude-code expands it). */
export const PERMISSION_SECRET_ENV = 'KEELSON_PERMISSION_SECRET';

/**
 * claude-code (`@anthropic-ai/claude-code`), the seed's reference driver. Headless:
 * `claude -p --output-format stream-json --verbose --include-partial-messages` with
 * `--permission-mode acceptEdits` (the narrowest mode that edits the working tree; other tools it
 * would have asked about come back as `permission_denials`, surfaced as ApprovalRequest). Pins new
 * ids with `--session-id`, resumes with `--resume`; transcripts are
 * `<CLAUDE_CONFIG_DIR>/projects/<cwd slug>/<uuid>.jsonl`.
 */
export class ClaudeCodeDriver extends JsonlStoreDriver {
  readonly harnessId = 'claude-code' as const;
  readonly displayName = 'Claude Code';
  readonly binary = { command: 'claude', npm: { pkg: '@anthropic-ai/claude-code', bin: 'claude' } };
  readonly features: DriverFeatures = { pinning: 'session-id', approvals: true, attachments: false, permissionHook: true, reasons: { attachments: 'claude -p takes the prompt as text only' } };
  /** `claude --effort` (2.x). */
  override readonly efforts = ['low', 'medium', 'high', 'xhigh', 'max'];

  /** The configured model, then claude's own aliases (`--model` also takes a model's full name). */
  override models(): string[] {
    return [...new Set([...super.models(), 'sonnet', 'opus', 'haiku'])];
  }

  get configDir(): string {
    return join(this.root, 'config');
  }

  private get projectsDir(): string {
    return join(this.configDir, 'projects');
  }

  protected async writeConfig(): Promise<void> {
    await mkdir(this.configDir, { recursive: true });
  }

  async command(binary: string, spec: TurnSpec): Promise<TurnCommand> {
    const env = this.baseEnv(spec);
    env.CLAUDE_CONFIG_DIR = this.configDir;
    env.ANTHROPIC_API_KEY = this.settings.apiKey;
    if (this.settings.modelBaseUrl) env.ANTHROPIC_BASE_URL = this.settings.modelBaseUrl;
    if (this.settings.model) env.ANTHROPIC_MODEL = this.settings.model;
    Object.assign(env, { CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1' });
    const argv = [binary, '-p', '--output-format', 'stream-json', '--verbose', '--include-partial-messages', '--permission-mode', 'acceptEdits'];
    if (spec.nativeId) argv.push(spec.fresh ? '--session-id' : '--resume', spec.nativeId);
    if (spec.allowTools.length) argv.push('--allowedTools', ...spec.allowTools);
    if (spec.model) argv.push('--model', spec.model);
    if (spec.effort) argv.push('--effort', spec.effort);
    if (spec.permissionPrompt) {
      // The tool it may not use asks the mesh first (its permission endpoint, with this turn's secret) and waits.
      // The secret rides in the child's environment, never on its command line (which `ps` shows).
      env[PERMISSION_SECRET_ENV] = spec.permissionPrompt.secret;
      const servers = { [PERMISSION_SERVER]: { type: 'http', url: spec.permissionPrompt.url, headers: { Authorization: `Bearer \${${PERMISSION_SECRET_ENV}}` } } };
      argv.push('--mcp-config', JSON.stringify({ mcpServers: servers }), '--permission-prompt-tool', `mcp__${PERMISSION_SERVER}__${PERMISSION_TOOL}`);
      // An approval may take long: the hook's call waits as long as the turn may run.
      env.MCP_TOOL_TIMEOUT = String(this.settings.turnTimeoutMs ?? 3_600_000);
    }
    argv.push('--', spec.text);
    return { argv, env };
  }

  mapper(opts: { liveApprovals?: boolean } = {}): StreamJsonMapper {
    return new StreamJsonMapper(!opts.liveApprovals);
  }

  protected get storeDir(): string {
    return this.projectsDir;
  }

  protected nativeIdOfFile(name: string): string | null {
    return name.endsWith('.jsonl') ? name.slice(0, -'.jsonl'.length) : null;
  }

  protected async summarize(nativeId: string, file: string): Promise<SessionSummary> {
    const head = await readJsonlHead(this.projectsDir, file);
    const first = head.find((r) => stringOrUndefined(r.cwd));
    const prompt = head.find((r) => r.type === 'user' && !r.isMeta && typeof rec(r.message).content === 'string');
    const st = await stat(file).catch(() => null);
    const created = head.map((r) => stringOrUndefined(r.timestamp)).find(Boolean);
    return {
      sessionId: formatSessionId(this.harnessId, nativeId),
      harnessId: this.harnessId,
      nativeId,
      cwd: stringOrUndefined(first?.cwd) ?? null,
      title: promptTitleOf(stringOrUndefined(rec(prompt?.message).content)),
      createdAt: created ? new Date(created) : st?.birthtime ?? null,
      updatedAt: st?.mtime ?? null,
    };
  }

  protected entriesOf(records: Record<string, unknown>[]): TranscriptEntry[] {
    const entries: TranscriptEntry[] = [];
    for (const r of records) {
      if ((r.type !== 'user' && r.type !== 'assistant') || r.isMeta === true || !stringOrUndefined(r.uuid)) continue;
      const message = rec(r.message);
      const createdAt = stringOrUndefined(r.timestamp) ? new Date(r.timestamp as string) : null;
      const content = message.content;
      if (typeof content === 'string') {
        entries.push({ id: r.uuid as string, role: r.type as string, content, createdAt });
        continue;
      }
      const blocks = arr(content).map(rec);
      const results = blocks.filter((b) => b.type === 'tool_result');
      if (results.length) {
        entries.push({
          id: r.uuid as string,
          role: 'tool',
          content: results.map((b) => toolResultText(b.content)).join('\n'),
          createdAt,
          metadata: { toolUseIds: results.map((b) => stringOrUndefined(b.tool_use_id)), isError: results.some((b) => b.is_error === true) },
        });
        continue;
      }
      const text = blocks.filter((b) => b.type === 'text').map((b) => stringOrUndefined(b.text) ?? '').join('');
      const calls = blocks.filter((b) => b.type === 'tool_use').map((b) => ({ id: stringOrUndefined(b.id) ?? '', name: stringOrUndefined(b.name) ?? '', input: clipJson(b.input).value }));
      const thinking = blocks.filter((b) => b.type === 'thinking').map((b) => stringOrUndefined(b.thinking) ?? '').join('');
      if (!text && !calls.length && !thinking) continue;
      entries.push({
        id: r.uuid as string,
        role: r.type as string,
        content: text,
        toolCalls: calls.length ? calls : null,
        createdAt,
        metadata: thinking ? { reasoning: thinking } : null,
      });
    }
    return entries;
  }
}
