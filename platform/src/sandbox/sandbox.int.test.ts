import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSandbox, gitDirsOf, MESH_INSTALL_ROOT, probeBwrap, SandboxUnavailableError, type SandboxRequest } from './index';

// Real bubblewrap (/usr/bin/bwrap; `.ci/run` installs it). A throwaway tree:
//   <base>/project     the cwd (writable), with a .git and a .keelson
//   <base>/home        a hidden directory (the mesh's KEELSON_HOME) holding the run's artifacts
//   <base>/outside     never writable
const base = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-sandbox-')));
const project = join(base, 'project');
const home = join(base, 'home');
const artifacts = join(home, 'runs', 'r1', 'artifacts');
const outside = join(base, 'outside');
for (const dir of [join(project, '.keelson', 'workflows'), artifacts, outside]) mkdirSync(dir, { recursive: true });
writeFileSync(join(home, 'credentials.key'), 'the key\n');
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd, encoding: 'utf8' });
git(project, 'init', '-q');
git(project, 'commit', '-q', '--allow-empty', '-m', 'init');

let server: Server;
let port: number;
beforeAll(async () => {
  server = createServer((_req, res) => res.end('hello from the host\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(base, { recursive: true, force: true });
});

const sandbox = createSandbox({ hidden: [home] });

/** Runs a bash command line in the sandbox; its exit code and output (stdout and stderr). */
async function sh(command: string, request: Partial<SandboxRequest> = {}): Promise<{ code: number | null; out: string }> {
  const { argv } = await sandbox.command({ argv: ['bash', '-c', command], cwd: project, writable: [project, artifacts], what: 'test', ...request });
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { env: { PATH: process.env.PATH!, HOME: '/root' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('the process sandbox (real bubblewrap)', () => {
  it('finds a working bwrap here and reports its version', async () => {
    await expect(probeBwrap()).resolves.toMatchObject({ ok: true, path: expect.stringMatching(/\/bwrap$/), version: expect.stringMatching(/^bubblewrap \d/), error: null });
  });

  it('writes the cwd and $ARTIFACTS_DIR, and nothing else: not outside, not /etc, not the host’s /tmp', async () => {
    const r = await sh(`echo in > in.txt && echo art > ${artifacts}/a.txt && echo x > ${outside}/x 2>&1; echo x > /etc/keelson-x; echo x > ${base}/x; echo done`);
    expect(r.out).toMatch(/Read-only file system/);
    // stdout and stderr come through two pipes: their lines may interleave in either order.
    expect(r.out).toMatch(/^done$/m);
    expect(r.code).toBe(0);
    expect(readFileSync(join(project, 'in.txt'), 'utf8')).toBe('in\n');
    expect(readFileSync(join(artifacts, 'a.txt'), 'utf8')).toBe('art\n');
    expect([existsSync(join(outside, 'x')), existsSync('/etc/keelson-x'), existsSync(join(base, 'x'))]).toEqual([false, false, false]);
  });

  it('gives it a private /tmp and hides the mesh’s own state, except what it binds back', async () => {
    writeFileSync(join(tmpdir(), 'keelson-sandbox-host-file'), 'host tmp\n');
    const r = await sh(`ls /tmp; echo tmp > /tmp/scratch && cat /tmp/scratch; cat ${home}/credentials.key || echo hidden; ls ${artifacts}`);
    expect(r.out).not.toContain('keelson-sandbox-host-file');
    expect(r.out).toContain('tmp\n');
    expect(r.out).toContain('hidden\n');
    expect(r.out).not.toContain('the key');
    expect(r.out).toContain('a.txt');
    expect(existsSync(join(tmpdir(), 'scratch'))).toBe(false);
  });

  it("keeps the mesh's own install readable, even where the private /tmp covers it (a checkout under /tmp)", async () => {
    const cli = join(MESH_INSTALL_ROOT, 'node_modules', '.bin');
    expect(existsSync(cli)).toBe(true);
    const seen = await sh(`test -r '${join(MESH_INSTALL_ROOT, 'package.json')}' && test -d '${cli}' && echo visible`);
    expect(seen).toEqual({ code: 0, out: 'visible\n' });
    // …read-only: a command cannot change the mesh it runs under.
    expect((await sh(`touch '${join(MESH_INSTALL_ROOT, 'package.json')}'`)).code).not.toBe(0);
  });

  it('mounts an existing .git and .keelson of a writable directory read-only', async () => {
    const r = await sh('echo hook > .git/hooks/pre-commit; echo wf > .keelson/workflows/evil.yaml; git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m agent; echo rc=$?');
    expect(r.out).toMatch(/\.git\/hooks\/pre-commit: Read-only file system/);
    expect(r.out).toMatch(/\.keelson\/workflows\/evil\.yaml: Read-only file system/);
    expect(r.out).toMatch(/rc=(?!0)\d+/);
    expect(existsSync(join(project, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(git(project, 'log', '--format=%s')).toBe('init\n');
  });

  it('stands an empty read-only folder in for an absent .git and .keelson: no git init, no planted workflows', async () => {
    const plain = join(base, 'plain');
    mkdirSync(plain);
    const r = await sh('mkdir -p .keelson/workflows; echo wf > .keelson/workflows/evil.yaml; git init -q; echo hook > .git/hooks/post-checkout; ls -A .git .keelson | wc -l; echo ok > work.txt && echo wrote', { cwd: plain, writable: [plain] });
    expect(r.out).toMatch(/\.keelson\/workflows.*Read-only file system/);
    expect(r.out).toMatch(/wrote/);
    // Left behind: the empty mount points, which git and the workflow catalog ignore.
    expect(readdirSync(plain).sort()).toEqual(['.git', '.keelson', 'work.txt']);
    expect([readdirSync(join(plain, '.git')), readdirSync(join(plain, '.keelson'))]).toEqual([[], []]);
    // …and a gitWrite command cannot create them either.
    const again = await sh('git init -q && echo initialised', { cwd: plain, writable: [plain], gitWrite: true });
    expect(again.out).not.toContain('initialised');
    expect(readdirSync(join(plain, '.git'))).toEqual([]);
  });

  it('keeps hooks and config read-only for a gitWrite command, which still commits', async () => {
    const repo = join(base, 'gitwrite');
    mkdirSync(repo);
    git(repo, 'init', '-q');
    rmSync(join(repo, '.git', 'hooks'), { recursive: true, force: true });
    const r = await sh(
      'echo hook > .git/hooks/pre-commit; git config core.fsmonitor "touch /tmp/pwned"; echo "[core] hooksPath = x" >> .git/config; echo c > c.txt && git add c.txt && git -c user.name=t -c user.email=t@example.com commit -q -m sandboxed && echo committed',
      { cwd: repo, writable: [repo], gitWrite: true },
    );
    expect(r.out).toMatch(/\.git\/hooks\/pre-commit: (Read-only file system|No such file or directory)/);
    expect(r.out).toMatch(/could not lock config file|Read-only file system/);
    expect(r.out).toMatch(/committed/);
    expect(git(repo, 'log', '--format=%s')).toBe('sandboxed\n');
    expect(git(repo, 'config', '--local', '--list')).not.toMatch(/fsmonitor|hookspath/i);
    expect(readdirSync(join(repo, '.git', 'hooks'))).toEqual([]);
  });

  it('lets a gitWrite command commit, in the repository and in a linked worktree', async () => {
    const wt = join(base, 'wt');
    git(project, 'worktree', 'add', '-q', '-b', 'feature', wt);
    expect(gitDirsOf(wt)).toEqual([join(project, '.git', 'worktrees', 'wt'), join(project, '.git')]);
    const commit = 'echo change > f.txt && git add f.txt && git -c user.name=t -c user.email=t@example.com commit -q -m sandboxed && echo committed';
    await expect(sh(commit, { cwd: wt, writable: [wt] })).resolves.toMatchObject({ out: expect.not.stringContaining('committed') });
    // Without gitWrite the worktree's git directories are still readable, wherever they are (here under the private /tmp).
    await expect(sh('git log --format=%s -1 && git status --short', { cwd: wt, writable: [wt] })).resolves.toMatchObject({ code: 0, out: 'init\n?? f.txt\n' });
    await expect(sh(commit, { cwd: wt, writable: [wt], gitWrite: true })).resolves.toMatchObject({ code: 0, out: 'committed\n' });
    expect(git(wt, 'log', '--format=%s', '-1')).toBe('sandboxed\n');
  });

  it('cuts the network unless the request declares it', async () => {
    const connect = `exec 3<>/dev/tcp/127.0.0.1/${port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3`;
    const cut = await sh(connect);
    expect(cut.code).not.toBe(0);
    expect(cut.out).toMatch(/Connection refused/);
    const open = await sh(connect, { network: true });
    expect(open).toMatchObject({ code: 0, out: expect.stringContaining('hello from the host') });
  });

  describe('host Unix sockets (escapes that must fail)', () => {
    const connectUnix = (path: string) => `python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print('connected')" ${path}`;
    let socketServer: NetServer;
    const planted = `/run/keelson-sandbox-test-${process.pid}.sock`;
    beforeAll(async () => {
      // A D-Bus- or Docker-like service socket of the host's, under /run.
      socketServer = createNetServer((c) => {
        // A client that connects and leaves at once (the probe) makes the reply fail with EPIPE.
        c.on('error', () => undefined);
        c.end('hello from a host socket\n');
      });
      await new Promise<void>((resolve) => socketServer.listen(planted, resolve));
    });
    afterAll(async () => {
      await new Promise((resolve) => socketServer.close(resolve));
      rmSync(planted, { force: true });
    });

    it.each([false, true])("cannot reach the host's Postgres socket or a service socket under /run (network: %s)", async (network) => {
      const pgSocket = '/run/postgresql/.s.PGSQL.5432';
      // Both are reachable outside the sandbox: the attempt inside would succeed without the cover.
      expect(execFileSync('bash', ['-c', `${connectUnix(pgSocket)} && ${connectUnix(planted)}`], { encoding: 'utf8' })).toBe('connected\nconnected\n');
      for (const path of [pgSocket, planted, planted.replace('/run/', '/var/run/')]) {
        const r = await sh(connectUnix(path), { network });
        expect({ path, code: r.code, out: r.out }).toEqual({ path, code: 1, out: expect.stringMatching(/FileNotFoundError|No such file|Errno 97/) });
      }
      if (!network) {
        // No AF_UNIX socket at all without the network (seccomp): abstract names and files anywhere.
        const py = (code: string) => `python3 -c "import socket,errno; ${code}"`;
        const unix = await sh(py("s=socket.socket(socket.AF_UNIX)\nprint('made')"), { network });
        expect({ code: unix.code, out: unix.out }).toEqual({ code: 1, out: expect.stringMatching(/OSError: \[Errno 97\] Address family not supported/) });
        const abstract = await sh(py("s=socket.socket(socket.AF_UNIX); s.connect(bytes([0])+b'keelson-test')"), { network });
        expect(abstract.out).toMatch(/Errno 97/);
        // What stays: IP sockets (loopback only), socketpair, and ordinary programs.
        const rest = await sh(`${py("socket.socket(socket.AF_INET).close(); a,b=socket.socketpair(); a.send(b'x'); print(b.recv(1))")} && node -e "console.log('node ok')" && git status --short >/dev/null && echo git ok`, { network });
        expect(rest).toEqual({ code: 0, out: "b'x'\nnode ok\ngit ok\n" });
      } else {
        const unix = await sh(`python3 -c "import socket; socket.socket(socket.AF_UNIX); print('made')"`, { network });
        expect(unix).toEqual({ code: 0, out: 'made\n' });
      }
      // The folder itself is an empty tmpfs inside.
      expect(await sh('ls -A /run | wc -l', { network })).toEqual({ code: 0, out: '0\n' });
    });
  });

  describe('other processes and the host (escapes that must fail)', () => {
    const py = (code: string) => `python3 -c "import ctypes,os,sys; libc=ctypes.CDLL(None, use_errno=True)\n${code}"`;
    // PTRACE_SEIZE (0x4206: attaches without stopping the tracee); process_vm_readv with no iovecs still makes the access check.
    const attach = (pid: string) => py(`r=libc.ptrace(0x4206, ${pid}, 0, 0); print('ptrace', r, os.strerror(ctypes.get_errno()) if r else 'attached')`);
    const vmRead = (pid: string) => py(`r=libc.process_vm_readv(${pid}, None, 0, None, 0, 0); print('vm_readv', r, os.strerror(ctypes.get_errno()) if r else 'read')`);

    it.each([false, true])('cannot ptrace or read the memory of its init or its parent (network: %s)', async (network) => {
      // Outside the sandbox the same calls work on a child of ours: the refusal comes from the sandbox.
      const host = execFileSync('bash', ['-c', `sleep 5 & ${vmRead('$!')}; kill $!`], { encoding: 'utf8' });
      expect(host).toBe('vm_readv 0 read\n');
      const r = await sh(`${attach('1')}; ${attach('os.getppid()')}; ${vmRead('1')}; ${vmRead('os.getppid()')}`, { network });
      expect(r).toEqual({ code: 0, out: 'ptrace -1 Operation not permitted\nptrace -1 Operation not permitted\nvm_readv -1 Operation not permitted\nvm_readv -1 Operation not permitted\n' });
    });

    it("sees neither the host's root through /proc nor its /dev/shm", async () => {
      const shm = `/dev/shm/keelson-sandbox-test-${process.pid}`;
      writeFileSync(shm, 'host shm\n');
      try {
        const r = await sh(`cat /proc/1/root${home}/credentials.key /proc/1/root/run/postgresql/.s.PGSQL.5432 /proc/\${PPID}/root${home}/credentials.key ${shm} 2>&1 | grep -c 'No such file'; ls /proc | grep -cE '^[0-9]+$'; echo inner > /dev/shm/inner && cat /dev/shm/inner`);
        expect(r).toEqual({ code: 0, out: '4\n' + r.out.split('\n')[1] + '\ninner\n' });
        expect(Number(r.out.split('\n')[1])).toBeLessThan(10);
        expect(existsSync('/dev/shm/inner')).toBe(false);
      } finally {
        rmSync(shm, { force: true });
      }
    });
  });

  it('keeps its own pid namespace: a daemon that left the process group dies with the sandbox', async () => {
    const marker = `keelson-daemon-${process.pid}`;
    const r = await sh(`setsid bash -c 'exec -a ${marker} sleep 30' </dev/null >/dev/null 2>&1 & sleep 0.2; ps -e -o pid= | wc -l`);
    expect(r.code).toBe(0);
    expect(Number(r.out.trim())).toBeLessThan(10);
    for (let i = 0; i < 50 && execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).includes(marker); i++) await new Promise((res) => setTimeout(res, 100));
    expect(execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })).not.toContain(marker);
  });

  it('refuses when bwrap is unusable, naming the fix; runs the command as given only when off', async () => {
    const missing = createSandbox({ bwrap: join(base, 'no-such-bwrap') });
    const request = { argv: ['true'], cwd: project, writable: [project], what: 'Bash' };
    await expect(missing.command(request)).rejects.toThrow(SandboxUnavailableError);
    await expect(missing.command(request)).rejects.toMatchObject({
      code: 'CAPABILITY_UNSUPPORTED',
      message: `Bash refused: KEELSON_SANDBOX=required and the sandbox is unavailable (${join(base, 'no-such-bwrap')} not found); install bubblewrap (Debian/Ubuntu: apt-get install -y bubblewrap) or set KEELSON_SANDBOX=off to run without confinement`,
    });
    const warnings: string[] = [];
    const off = createSandbox({ mode: 'off', bwrap: join(base, 'no-such-bwrap'), warn: (m) => warnings.push(m) });
    await expect(off.command(request)).resolves.toEqual({ argv: ['true'], sandboxed: false });
    expect(warnings).toEqual([expect.stringMatching(/^KEELSON_SANDBOX=off: Bash tool calls, bash\/script nodes and harness CLIs run without bubblewrap/)]);
  });
});
