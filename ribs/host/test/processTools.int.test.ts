import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep, startHost } from './support/quietHost';

// Grep (git grep) and Bash: real child processes in a throwaway tree (see codingTools.unit.test.ts).

const root = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-proc-')));
const project = join(root, 'project');
const outside = join(root, 'outside');
mkdirSync(join(project, 'src/lib'), { recursive: true });
mkdirSync(outside);
writeFileSync(join(outside, 'secret.txt'), 'needle outside\n');
symlinkSync(join(outside, 'secret.txt'), join(project, 'leak.txt'));
symlinkSync(outside, join(project, 'escape'));
writeFileSync(join(project, 'src/a.ts'), 'const needle = 1;\nconst other = 2;\n');
writeFileSync(join(project, 'src/lib/b.tsx'), 'export const NEEDLE = "b";\n');
writeFileSync(join(project, 'notes.md'), 'a needle in the notes\n');
writeFileSync(join(project, 'ignored.log'), 'needle in an ignored file\n');
writeFileSync(join(project, '.gitignore'), '*.log\n');

/** A host whose processes inherit PATH, git's config and one credential-looking variable. */
async function tools(turnContext?: Record<string, unknown>) {
  const { host } = await startHost([], { env: { PATH: process.env.PATH, HOME: process.env.HOME, GIT_CONFIG_NOSYSTEM: '1', DEMO_API_KEY: 'sk-secret' } });
  return (name: string, input: unknown, signal?: AbortSignal) =>
    host.executeTool({ name, input, surface: 'workflow', cwd: project, allowedDirectories: [project], ...(signal ? { signal } : {}), ...(turnContext ? { turnContext } : {}) });
}

const DENIED = { status: 'policy-denied', isError: true, policyId: 'builtin:path_confinement' };

describe('Grep', () => {
  it('finds matches as path:line:text, honouring .gitignore and never reading through symlinks', async () => {
    const call = await tools();
    await expect(call('Grep', { pattern: 'needle' })).resolves.toMatchObject({
      status: 'ok',
      content: 'notes.md:1:a needle in the notes\nsrc/a.ts:1:const needle = 1;',
    });
  });

  it('narrows by glob, path and case, and answers paths or counts', async () => {
    const call = await tools();
    await expect(call('Grep', { pattern: 'needle', glob: '*.{ts,tsx}', ignore_case: true })).resolves.toMatchObject({
      content: 'src/a.ts:1:const needle = 1;\nsrc/lib/b.tsx:1:export const NEEDLE = "b";',
    });
    await expect(call('Grep', { pattern: '\\bconst \\w+ = \\d', path: 'src/a.ts', output_mode: 'count' })).resolves.toMatchObject({ content: 'src/a.ts:2' });
    await expect(call('Grep', { pattern: 'needle', path: 'src', output_mode: 'files_with_matches' })).resolves.toMatchObject({ content: 'src/a.ts' });
    await expect(call('Grep', { pattern: 'haystack' })).resolves.toMatchObject({ status: 'ok', content: 'No matches' });
  });

  it('reports a malformed pattern, denies paths outside and caps the results', async () => {
    const call = await tools();
    await expect(call('Grep', { pattern: 'a(' })).resolves.toMatchObject({ status: 'tool-error', content: expect.stringMatching(/^git grep failed: fatal: .*a\(/) });
    for (const path of ['..', outside, 'escape', 'leak.txt']) await expect(call('Grep', { pattern: 'needle', path })).resolves.toMatchObject(DENIED);
    await expect(call('Grep', { pattern: 'needle', glob: '../*' })).resolves.toMatchObject({ status: 'tool-error', content: "glob '../*' must be relative to path, without '..'" });
    mkdirSync(join(project, 'many'));
    writeFileSync(join(project, 'many', 'lines.txt'), 'hit\n'.repeat(400));
    const lines = (await call('Grep', { pattern: 'hit', path: 'many' })).content.split('\n');
    expect(lines).toHaveLength(251);
    expect(lines[0]).toBe('many/lines.txt:1:hit');
    expect(lines.at(-1)).toBe('[more results not shown; narrow the pattern, path or glob]');
  });
});

describe('Bash', () => {
  it('runs in the turn\'s cwd without credentials in its environment, stderr interleaved', async () => {
    const call = await tools();
    await expect(call('Bash', { command: 'pwd; echo "key=[$DEMO_API_KEY]"; echo oops >&2; ls src' })).resolves.toMatchObject({
      status: 'ok',
      content: `${project}\nkey=[]\noops\na.ts\nlib`,
    });
    await expect(call('Bash', { command: 'git status --short 2>/dev/null || echo "not a repo"' })).resolves.toMatchObject({ status: 'ok', content: 'not a repo' });
  });

  it("names a prompt node's artifacts folder as $ARTIFACTS_DIR, and refuses one outside the roots", async () => {
    mkdirSync(join(project, 'artifacts'), { recursive: true });
    const call = await tools({ runId: 'r1', artifactsDir: join(project, 'artifacts') });
    await expect(call('Bash', { command: 'echo noted > "$ARTIFACTS_DIR/n.md"; echo "[$ARTIFACTS_DIR]"' })).resolves.toMatchObject({
      status: 'ok',
      content: `[${join(project, 'artifacts')}]`,
    });
    expect(readFileSync(join(project, 'artifacts/n.md'), 'utf8')).toBe('noted\n');
    // Without one, the variable is simply unset.
    await expect((await tools())('Bash', { command: 'echo "[${ARTIFACTS_DIR-unset}]"' })).resolves.toMatchObject({ status: 'ok', content: '[unset]' });
    const outsideCall = await tools({ artifactsDir: outside });
    await expect(outsideCall('Bash', { command: 'echo hi' })).resolves.toMatchObject({ isError: true, content: expect.stringContaining(outside) });
  });

  it('reports a failing command with its exit code as an error result', async () => {
    const call = await tools();
    await expect(call('Bash', { command: 'echo partial; exit 3' })).resolves.toMatchObject({ status: 'tool-error', isError: true, content: 'partial\n[exit code 3]' });
  });

  it('denies commands naming paths outside the roots before running them', async () => {
    const call = await tools();
    for (const command of ['cat ../outside/secret.txt', `cat ${outside}/secret.txt`, 'cat /etc/passwd', 'cat escape/secret.txt', `echo pwned > ${outside}/x`]) {
      await expect(call('Bash', { command })).resolves.toMatchObject(DENIED);
    }
    expect(existsSync(join(outside, 'x'))).toBe(false);
  });

  it('keeps the first and last 15,000 bytes of a large output', async () => {
    const call = await tools();
    const { content } = await call('Bash', { command: 'head -c 100000 /dev/zero | tr "\\0" a; echo; echo THE-END' });
    expect(content.length).toBeLessThan(30_200);
    expect(content.startsWith('a'.repeat(15_000))).toBe(true);
    expect(content).toMatch(/\n\[… \d+ bytes of output omitted …\]\n/);
    expect(content.endsWith('THE-END')).toBe(true);
  });

  it('kills the process group on timeout and on abort, and background leftovers when the command ends', async () => {
    const call = await tools();
    const started = Date.now();
    const timedOut = await call('Bash', { command: `${leftover('timeout')} echo started > bg.started; sleep 30`, timeout: 300 });
    expect(timedOut).toMatchObject({ status: 'tool-error', content: expect.stringMatching(/\[timed out after 300 ms; the process group was killed\]$/) });
    expect(Date.now() - started).toBeLessThan(5000);
    await expectGone('timeout');

    const controller = new AbortController();
    const aborted = call('Bash', { command: `${leftover('abort')} echo started > abort.started; sleep 30` }, controller.signal);
    await waitForFile(join(project, 'abort.started'));
    // The background subshell renames itself (exec -a) on its own time: wait for the name, not the file.
    const marker = `keelson-leftover-${process.pid}-abort`;
    for (let i = 0; i < 100 && !liveWithMarker(marker); i++) await new Promise((r) => setTimeout(r, 50));
    expect(liveWithMarker(marker)).toBe(true);
    controller.abort();
    await expect(aborted).resolves.toMatchObject({ status: 'cancelled' });
    await expectGone('abort');

    await expect(call('Bash', { command: `${leftover('left')} echo done` })).resolves.toMatchObject({ status: 'ok', content: 'done' });
    await expectGone('left');
  });
});

async function waitForFile(path: string): Promise<void> {
  for (let i = 0; i < 100 && !existsSync(path); i++) await sleep(20);
}

/** A background `sleep 30` the host can find by a marker in its command line (the sandbox has its own pid namespace: `$!` is not a host pid). */
function leftover(tag: string): string {
  return `(exec -a keelson-leftover-${process.pid}-${tag} sleep 30) &`;
}

/** No live process carries the leftover's marker within a few seconds (zombies do not count). */
async function expectGone(tag: string): Promise<void> {
  const marker = `keelson-leftover-${process.pid}-${tag}`;
  for (let i = 0; i < 150; i++) {
    if (!liveWithMarker(marker)) return;
    await sleep(20);
  }
  throw new Error(`a process marked ${marker} is still running`);
}

function liveWithMarker(marker: string): boolean {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(marker)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}
