import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A temp folder with its own git identity (a global config of its own, no system config). */
export class GitSandbox {
  readonly dir = mkdtempSync(join(tmpdir(), 'keelson-ribs-git-'));
  readonly env: Record<string, string | undefined>;

  constructor(identity: { name: string; email: string } | null = { name: 'Keelson Test', email: 'test@keelson.invalid' }) {
    const config = join(this.dir, 'gitconfig');
    const lines = ['[init]', '\tdefaultBranch = main'];
    if (identity) lines.push('[user]', `\tname = ${identity.name}`, `\temail = ${identity.email}`);
    writeFileSync(config, `${lines.join('\n')}\n`);
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GIT_')));
    this.env = { ...clean, GIT_CONFIG_GLOBAL: config, GIT_CONFIG_NOSYSTEM: '1', HOME: this.dir };
  }

  git(cwd: string, ...args: string[]): string {
    return execFileSync('git', args, { cwd, env: this.env as NodeJS.ProcessEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  }

  /** A repository with one commit on main. */
  repo(name: string): string {
    const root = join(this.dir, name);
    mkdirSync(root, { recursive: true });
    this.git(root, 'init', '--quiet');
    writeFileSync(join(root, 'README.md'), `# ${name}\n`);
    this.git(root, 'add', '.');
    this.git(root, 'commit', '--quiet', '-m', 'Initial commit');
    return root;
  }

  /** A bare clone of `root` set as its upstream (`origin/main`). */
  upstream(root: string): string {
    const bare = `${root}.git`;
    this.git(this.dir, 'clone', '--quiet', '--bare', root, bare);
    this.git(root, 'remote', 'add', 'origin', bare);
    this.git(root, 'fetch', '--quiet', 'origin');
    this.git(root, 'branch', '--quiet', '--set-upstream-to=origin/main', 'main');
    return bare;
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
