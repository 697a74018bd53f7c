import { execFile, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The identity every test git config carries; asserted on the "Initialize project" commit. */
export const testIdentity = { name: 'Keelson Test', email: 'keelson-test@example.invalid' };

/**
 * process.env without any GIT_* variable, so a test never depends on the machine's git setup
 * (identity overrides, GIT_DIR, a global config, …).
 */
export function envWithoutGit(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('GIT_')));
}

/**
 * An environment for git with its own global config at `<dir>/<file>` (the test identity plus
 * `extra` lines) and no system config.
 */
export function testGitEnv(dir: string, extra: string[] = [], file = 'gitconfig'): NodeJS.ProcessEnv {
  const config = join(dir, file);
  writeFileSync(config, [`[user]`, `\tname = ${testIdentity.name}`, `\temail = ${testIdentity.email}`, ...extra, ''].join('\n'));
  return { ...envWithoutGit(), GIT_CONFIG_GLOBAL: config, GIT_CONFIG_NOSYSTEM: '1' };
}

/** Runs git synchronously for fixtures and assertions; returns trimmed stdout. */
export function git(cwd: string, env: NodeJS.ProcessEnv, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** Whether `git <args>` exits 0. */
export function gitSucceeds(cwd: string, env: NodeJS.ProcessEnv, ...args: string[]): boolean {
  try {
    git(cwd, env, ...args);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs git without blocking the event loop: needed whenever git talks to a server living in the
 * test's own process. Resolves with trimmed stdout.
 */
export function gitAsync(cwd: string, env: NodeJS.ProcessEnv, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd, env, encoding: 'utf8', timeout: 20_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`git ${args.join(' ')} failed: ${stderr || err.message}`)) : resolve(stdout.trim()),
    );
  });
}
