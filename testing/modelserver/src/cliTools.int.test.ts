import { readAnswer } from '../test/support/answers';
import { CLI_FIXTURES, fixture, type Harness } from '../test/support/cliRequests';
import { postSse } from '../test/support/http';
import { startModelServer, type ModelServer } from './index';

jest.setTimeout(30_000);

const CWD = '/work/projects/demo';

/** What each CLI's own write tool must receive for `WRITE_FILE notes/hello.txt Hello world`. */
const EXPECTED_WRITE: Record<Harness, { name: string; input: unknown }> = {
  'claude-code': { name: 'Write', input: { file_path: `${CWD}/notes/hello.txt`, content: 'Hello world\n' } },
  codex: { name: 'apply_patch', input: '*** Begin Patch\n*** Add File: notes/hello.txt\n+Hello world\n*** End Patch' },
  'qwen-code': { name: 'write_file', input: { file_path: `${CWD}/notes/hello.txt`, content: 'Hello world\n' } },
  pi: { name: 'write', input: { path: 'notes/hello.txt', content: 'Hello world\n' } },
  opencode: { name: 'write', input: { filePath: `${CWD}/notes/hello.txt`, content: 'Hello world\n' } },
};

let server: ModelServer;

beforeAll(async () => {
  server = await startModelServer();
});
afterAll(() => server?.stop());

describe.each(CLI_FIXTURES.map((f) => [f.harness, f] as const))('%s', (harness, f) => {
  const url = () => `${server.url}${f.path}`;

  it('answers WRITE_FILE with exactly one call to its own write tool, chosen by name and schema', async () => {
    const answer = readAnswer(f.protocol, await postSse(url(), f.first('WRITE_FILE notes/hello.txt Hello world', CWD), f.headers));
    expect(answer.calls).toHaveLength(1);
    const [call] = answer.calls;
    const expected = EXPECTED_WRITE[harness];
    expect(call.name).toBe(expected.name);
    expect(typeof expected.input === 'string' ? call.input : JSON.parse(call.input)).toEqual(expected.input);
    expect(answer.text).toBe('');
    expect(answer.stop).toBe({ anthropic: 'tool_use', chat: 'tool_calls', responses: 'completed' }[f.protocol]);
    expect(answer.usage).not.toBeNull();
  });

  it('ends the turn with `DONE <path>` once the tool result is back', async () => {
    const first = f.first('WRITE_FILE notes/hello.txt Hello world', CWD);
    const [call] = readAnswer(f.protocol, await postSse(url(), first, f.headers)).calls;
    const answer = readAnswer(f.protocol, await postSse(url(), f.followUp(first, call, 'Wrote notes/hello.txt'), f.headers));
    expect(answer.calls).toEqual([]);
    expect(answer.text).toBe('DONE notes/hello.txt');
    expect(answer.stop).toBe({ anthropic: 'end_turn', chat: 'stop', responses: 'completed' }[f.protocol]);
  });

  it('reads the prompt past the context the CLI injects, and unquoted', async () => {
    const answer = readAnswer(f.protocol, await postSse(url(), f.first('say hi', CWD), f.headers));
    expect(answer).toMatchObject({ text: 'ECHO say hi', calls: [] });
    const [recorded] = server.requests().slice(-1);
    expect(recorded).toMatchObject({ userText: 'say hi', toolRounds: 0, decidedBy: 'default:echo', side: false });
  });

  it('calls any offered tool by name with CALL_TOOL, and reports its result after', async () => {
    const tool = { 'claude-code': 'Bash', codex: 'exec_command', 'qwen-code': 'run_shell_command', pi: 'bash', opencode: 'bash' }[harness];
    const first = f.first(`CALL_TOOL ${tool} {"command":"ls","description":"list"}`, CWD);
    const [call] = readAnswer(f.protocol, await postSse(url(), first, f.headers)).calls;
    expect(call.name).toBe(tool);
    expect(JSON.parse(call.input)).toEqual({ command: 'ls', description: 'list' });
    const answer = readAnswer(f.protocol, await postSse(url(), f.followUp(first, call, 'a.txt\nb.txt'), f.headers));
    expect(answer.text).toBe(`DONE ${tool}: a.txt\nb.txt`);
  });
});

describe('tool choice fallbacks', () => {
  it("falls back to codex's shell tool with a heredoc when apply_patch is not offered", async () => {
    const f = fixture('codex');
    const body = { ...f.first('WRITE_FILE out/it.txt two words', CWD), tools: (f.first('', CWD).tools as Array<{ name: string }>).filter((t) => t.name !== 'apply_patch') };
    const [call] = readAnswer('responses', await postSse(`${server.url}${f.path}`, body)).calls;
    expect(call.name).toBe('exec_command');
    expect(JSON.parse(call.input)).toEqual({ cmd: "mkdir -p 'out' && cat > 'out/it.txt' <<'KEELSON_EOF'\ntwo words\nKEELSON_EOF" });
  });

  it('keeps an absolute path as given and says so in text when no tool can write', async () => {
    const f = fixture('qwen-code');
    const abs = readAnswer('chat', await postSse(`${server.url}${f.path}`, f.first('WRITE_FILE /tmp/x.txt hi', CWD)));
    expect(JSON.parse(abs.calls[0].input)).toEqual({ file_path: '/tmp/x.txt', content: 'hi\n' });

    const none = readAnswer('chat', await postSse(`${server.url}${f.path}`, { ...f.first('WRITE_FILE a.txt hi', CWD), tools: [] }));
    expect(none.calls).toEqual([]);
    expect(none.text).toBe('WRITE_FILE: none of the offered tools can write a file (no tools)');
  });
});
