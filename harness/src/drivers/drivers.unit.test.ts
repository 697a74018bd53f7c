import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from '@keelson/schema';
import { createDriverRegistry, type DriverRegistry } from '../registry';
import { harnessSettings } from '../settings';
import { capabilityNames } from '../contract';
import type { TurnSpec } from './cliDriver';

const UUID = '0b9f6a4e-3c2d-4e1f-8a7b-6c5d4e3f2a1b';

describe('driver command lines, homes and config', () => {
  let dir: string;
  let drivers: DriverRegistry;
  const spec = (over: Partial<TurnSpec> = {}): TurnSpec => ({ nativeId: UUID, fresh: false, cwd: '/work/p', text: '-starts with a dash', attachments: [], allowTools: [], env: { KEELSON_TASK_ID: 't-1' }, ...over });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keelson-drivers-'));
    const env = { KEELSON_HOME: dir, KEELSON_MODEL_BASE_URL: 'http://127.0.0.1:9999/', KEELSON_MODEL_API_KEY: 'k-1', DATABASE_URL: 'postgres://secret@db/x' };
    const processEnv = { ...env, PATH: '/usr/bin:/bin', TZ: 'Europe/Paris', GIT_AUTHOR_NAME: 'Dev', TEMPORAL_ADDRESS: '127.0.0.1:7233', KEELSON_CREDENTIALS_KEY: 'f'.repeat(64), OPENAI_API_KEY: 'sk-secret', GH_TOKEN: 'secret-gh' };
    drivers = createDriverRegistry(harnessSettings(parseEnv(env), processEnv));
    for (const d of Object.values(drivers)) if (d.implemented) await d.prepare();
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('runs every CLI with its own HOME under <KEELSON_HOME>/harness/<id>, the task id set and nothing of the mesh\'s environment', async () => {
    for (const id of ['claude-code', 'codex', 'qwen-code', 'pi', 'opencode'] as const) {
      const { env } = await drivers[id].command('/bin/cli', spec({ nativeId: id === 'opencode' ? 'ses_abcdefghijkl' : UUID }));
      expect(env.HOME).toBe(join(dir, 'harness', id, 'home'));
      expect(env.KEELSON_TASK_ID).toBe('t-1');
      expect(JSON.stringify(env)).not.toContain('secret');
      for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'KEELSON_CREDENTIALS_KEY', 'GH_TOKEN']) expect([id, name, env[name]]).toEqual([id, name, undefined]);
      // The allowlist of the process's environment passes (the sandboxEnv every shell command gets).
      expect(env).toMatchObject({ TZ: 'Europe/Paris', GIT_AUTHOR_NAME: 'Dev' });
    }
  });

  it('claude-code: stream-json with partial messages, acceptEdits, --session-id for a pinned first turn, --resume after, granted tools', async () => {
    const fresh = await drivers['claude-code'].command('/bin/claude', spec({ fresh: true }));
    expect(fresh.argv).toEqual(['/bin/claude', '-p', '--output-format', 'stream-json', '--verbose', '--include-partial-messages', '--permission-mode', 'acceptEdits', '--session-id', UUID, '--', '-starts with a dash']);
    const resumed = await drivers['claude-code'].command('/bin/claude', spec({ allowTools: ['Bash(ls)'] }));
    expect(resumed.argv).toEqual(expect.arrayContaining(['--resume', UUID, '--allowedTools', 'Bash(ls)']));
    expect(resumed.env).toMatchObject({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:9999', ANTHROPIC_API_KEY: 'k-1', CLAUDE_CONFIG_DIR: join(dir, 'harness', 'claude-code', 'config') });
  });

  it('claude-code: a turn with a permission hook names the mesh\'s endpoint (its secret as the bearer) as its permission prompt tool', async () => {
    const cmd = await drivers['claude-code'].command('/bin/claude', spec({ permissionPrompt: { url: 'http://127.0.0.1:4004/api/harness-permissions', secret: 's3cret' } }));
    const at = cmd.argv.indexOf('--mcp-config');
    expect(JSON.parse(cmd.argv[at + 1]!)).toEqual({ mcpServers: { keelson: { type: 'http', url: 'http://127.0.0.1:4004/api/harness-permissions', headers: { Authorization: 'Bearer ${KEELSON_PERMISSION_SECRET}' } } } });
    // The secret is in the child's environment only, never on its command line.
    expect(cmd.env.KEELSON_PERMISSION_SECRET).toBe('s3cret');
    expect(cmd.argv.join(' ')).not.toContain('s3cret');
    expect(cmd.argv[cmd.argv.indexOf('--permission-prompt-tool') + 1]).toBe('mcp__keelson__permission_prompt');
    expect(Number(cmd.env.MCP_TOOL_TIMEOUT)).toBeGreaterThan(0);
    // Without one, nothing of it.
    expect((await drivers['claude-code'].command('/bin/claude', spec())).argv).not.toContain('--permission-prompt-tool');
    // The hook's CLI reports no denials as approvals after the fact; without one, it does.
    const denial = { type: 'result', subtype: 'success', result: 'x', permission_denials: [{ tool_name: 'Bash', tool_use_id: 't1', tool_input: { command: 'ls' } }] };
    expect(drivers['claude-code'].mapper({ liveApprovals: true }).line(denial).events).toEqual([]);
    expect(drivers['claude-code'].mapper().line(denial).events.map((e) => e.type)).toEqual(['APPROVAL_REQUEST']);
  });

  it('codex: exec --json (resume <thread>), a Responses provider at the endpoint, never asks; the mesh sandbox replaces its own', async () => {
    const cmd = await drivers.codex.command('/bin/codex', spec());
    expect(cmd.argv).toEqual(['/bin/codex', 'exec', '--json', '--skip-git-repo-check', '-c', 'sandbox_mode="danger-full-access"', 'resume', UUID, '--', '-starts with a dash']);
    expect((await drivers.codex.command('/bin/codex', spec({ nativeId: null }))).argv).not.toContain('resume');
    const toml = await readFile(join(dir, 'harness', 'codex', 'codex', 'config.toml'), 'utf8');
    for (const line of ['approval_policy = "never"', 'sandbox_mode = "workspace-write"', 'base_url = "http://127.0.0.1:9999/v1"', 'wire_api = "responses"', 'env_key = "KEELSON_MODEL_API_KEY"', 'model = "gpt-5.5"']) expect(toml).toContain(line);
    expect(cmd.env).toMatchObject({ CODEX_HOME: join(dir, 'harness', 'codex', 'codex'), KEELSON_MODEL_API_KEY: 'k-1' });
    // With KEELSON_SANDBOX=off nothing confines the CLI: codex keeps its own workspace-write sandbox (config.toml).
    const unconfined = createDriverRegistry(harnessSettings(parseEnv({ KEELSON_HOME: dir, KEELSON_SANDBOX: 'off' }), { PATH: '/usr/bin:/bin' }));
    expect((await unconfined.codex.command('/bin/codex', spec())).argv).not.toContain('sandbox_mode="danger-full-access"');
  });

  it('qwen-code: auto-edit (the narrowest mode that offers its write tools), the prompt as --prompt=', async () => {
    const cmd = await drivers['qwen-code'].command('/bin/qwen', spec({ fresh: true }));
    expect(cmd.argv).toEqual(['/bin/qwen', '--output-format', 'stream-json', '--include-partial-messages', '--approval-mode', 'auto-edit', '--session-id', UUID, '--prompt=-starts with a dash']);
    expect(cmd.env).toMatchObject({ OPENAI_BASE_URL: 'http://127.0.0.1:9999/v1', OPENAI_API_KEY: 'k-1' });
    expect(JSON.parse(await readFile(join(dir, 'harness', 'qwen-code', 'home', '.qwen', 'settings.json'), 'utf8'))).toMatchObject({ security: { auth: { selectedType: 'openai' } } });
  });

  it('pi: a session pinned by file path, attachments as @files, a text that cannot be read as an option', async () => {
    await drivers.pi.pin(UUID, '/work/p');
    const cmd = await drivers.pi.command('/bin/pi', spec({ attachments: ['/work/p/a.txt'] }));
    const at = cmd.argv.indexOf('--session');
    expect(cmd.argv[at + 1]).toMatch(new RegExp(`/harness/pi/agent/sessions/--work-p--/.*_${UUID}\\.jsonl$`));
    expect(cmd.argv.slice(-2)).toEqual(['@/work/p/a.txt', ' -starts with a dash']);
    const header = JSON.parse((await readFile(cmd.argv[at + 1]!, 'utf8')).split('\n')[0]!);
    expect(header).toMatchObject({ type: 'session', id: UUID, cwd: '/work/p' });
    expect(await drivers.pi.hasNative(UUID)).toBe(true);
    await expect(drivers.pi.pin(UUID, '/work/p')).rejects.toThrow();
  });

  it('opencode: run --format json -s <ses_id>, a provider at the endpoint, edits allowed and other directories denied', async () => {
    const cmd = await drivers.opencode.command('/bin/opencode', spec({ nativeId: 'ses_abcdefghijkl' }));
    expect(cmd.argv).toEqual(['/bin/opencode', 'run', '--format', 'json', '-s', 'ses_abcdefghijkl', '--', '-starts with a dash']);
    expect(cmd.env.XDG_DATA_HOME).toBe(join(dir, 'harness', 'opencode', 'data'));
    const config = JSON.parse(await readFile(join(dir, 'harness', 'opencode', 'config', 'opencode', 'opencode.json'), 'utf8'));
    expect(config).toMatchObject({ permission: { edit: 'allow', external_directory: 'deny' }, provider: { keelson: { options: { baseURL: 'http://127.0.0.1:9999/v1', apiKey: 'k-1' } } } });
  });

  it('gives grok-build, kimi-code and hermes honest flags and refuses their operations', async () => {
    for (const id of ['grok-build', 'kimi-code', 'hermes'] as const) {
      const report = await drivers[id].report();
      expect(report).toMatchObject({ installed: false, version: null });
      expect(Object.values(report.flags).every((f) => f === false)).toBe(true);
      expect(Object.keys(report.reasons)).toHaveLength(capabilityNames.length);
      expect(await drivers[id].taskExecutor()).toMatchObject({ implemented: false });
      await expect(drivers[id].command('/bin/x', spec())).rejects.toMatchObject({ code: 'CAPABILITY_UNSUPPORTED' });
    }
  });

  it('says no CLI takes input mid-turn as the mesh runs it, and why (steers queue as next turns)', async () => {
    for (const id of ['claude-code', 'codex', 'opencode', 'pi', 'qwen-code'] as const) {
      const report = await drivers[id].report();
      expect(report.flags.midTurnInput).toBe(false);
      expect(report.reasons.midTurnInput).toMatch(new RegExp(`runs ${id} headless .*stdin closed.*next turn`));
    }
  });
  it('reads the JSONL session stores: sessions listed, found and transcribed, files of other shapes ignored', async () => {
    const other = '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
    const jsonl = (...records: unknown[]) => records.map((r) => JSON.stringify(r)).join('\n') + '\n';
    const claudeDir = join(dir, 'harness', 'claude-code', 'config', 'projects', '-work-p');
    await mkdir(claudeDir, { recursive: true });
    await writeFile(join(claudeDir, `${UUID}.jsonl`), jsonl(
      { type: 'user', uuid: 'u1', cwd: '/work/p', timestamp: '2026-01-01T00:00:00.000Z', message: { role: 'user', content: 'hello claude' } },
      { type: 'assistant', uuid: 'a1', timestamp: '2026-01-01T00:00:01.000Z', message: { content: [{ type: 'text', text: 'hi' }] } },
    ));
    await writeFile(join(claudeDir, 'not-a-session.jsonl'), jsonl({ type: 'user' }));
    await writeFile(join(claudeDir, 'notes.txt'), 'x');
    const claude = drivers['claude-code'];
    expect((await claude.listNative()).map((s) => s.sessionId)).toEqual([`claude-code:${UUID}`]);
    expect(await claude.findNative(UUID)).toMatchObject({ nativeId: UUID, cwd: '/work/p', title: 'hello claude' });
    expect((await claude.transcript(UUID)).map((e) => [e.id, e.role, e.content])).toEqual([['u1', 'user', 'hello claude'], ['a1', 'assistant', 'hi']]);
    expect(await claude.findNative(other)).toBeNull();
    expect(await claude.transcript(other)).toEqual([]);

    const qwenChats = join(dir, 'harness', 'qwen-code', 'home', '.qwen', 'projects', '-work-q', 'chats');
    await mkdir(qwenChats, { recursive: true });
    await writeFile(join(qwenChats, `${other}.jsonl`), jsonl({ type: 'user', uuid: 'q1', cwd: '/work/q', timestamp: '2026-01-02T00:00:00.000Z', message: { parts: [{ text: 'hello qwen' }] } }));
    expect((await drivers['qwen-code'].listNative()).map((s) => s.nativeId)).toEqual([other]);
    expect(await drivers['qwen-code'].hasNative(other)).toBe(true);
    expect(await drivers['qwen-code'].hasNative(UUID)).toBe(false);
    expect((await drivers['qwen-code'].transcript(other)).map((e) => [e.id, e.role, e.content])).toEqual([['q1', 'user', 'hello qwen']]);

    await drivers.pi.pin(other, '/work/r');
    expect(await drivers.pi.findNative(other)).toMatchObject({ sessionId: `pi:${other}`, cwd: '/work/r' });
    expect((await drivers.pi.listNative()).map((s) => s.nativeId).sort()).toEqual([UUID, other].sort());
    expect(await drivers.pi.transcript(other)).toEqual([]);
  });
});
