import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { shippedSources } from './support/sourceFiles';

// Every place the mesh's own code starts git, listed: each goes through the hardened runner
// (`runGit` / `gitInvocation` of @keelson/platform, whose pins keep a repository's config and refs from
// running anything) or through the rib host's exec, which applies it to every `git` it runs. A new
// call site fails this test until it is added here — after checking it is hardened. Commands run
// inside the sandbox (a node's own `git commit`) are the sandbox's business, not listed.

const root = join(__dirname, '..');

/** Shipped TypeScript: not tests, test support, benchmarks, declarations or the ClickClack stand-in. */
const shipped = shippedSources(root);

type Site = `${string}: ${string}`;

/** How a line starts git, or undefined. */
function gitStart(line: string): string | undefined {
  if (/\brunGit\(/.test(line) && !/function runGit/.test(line)) return 'runGit';
  if (/\bgitInvocation\(/.test(line) && !/function gitInvocation/.test(line)) return 'gitInvocation';
  if (/\bexec\.run(Text|Json)?\(\s*['"`]git['"`]/.test(line)) return 'rib exec';
  // Anything else that names git as a program: a spawn, an argv, a shell line.
  if (/\b(spawn|spawnSync|execFile|execFileSync|exec|execSync|fork|spawnRun)\(\s*['"`](\S*\/)?git['"`]/.test(line)) return 'spawn';
  if (/\bargv:\s*\[\s*['"`](\S*\/)?git['"`]/.test(line)) return 'argv';
  if (/['"`](sh|bash)['"`]\s*,\s*\[?\s*['"`]-c['"`]\s*,\s*['"`][^'"`]*\bgit\s/.test(line)) return 'shell';
  return undefined;
}

function inventory(): Site[] {
  const sites = new Set<Site>();
  for (const file of shipped) {
    readFileSync(join(root, file), 'utf8')
      .split('\n')
      .forEach((line) => {
        const how = gitStart(line);
        if (how) sites.add(`${file}: ${how}`);
      });
  }
  return [...sites].sort();
}

describe('every git the mesh starts', () => {
  it('is one of the reviewed call sites, each hardened', () => {
    expect(inventory()).toEqual(
      [
        // The runner itself: the one direct spawn, with the invocation the pins built.
        'platform/src/git/runGit.ts: gitInvocation',
        'platform/src/git/runGit.ts: spawn',
        // The rib host's exec: `git` is recognised and run through gitInvocation.
        'ribs/host/src/exec/createExec.ts: gitInvocation',
        'ribs/host/src/exec/createExec.ts: spawn',
        // Grep: gitInvocation builds the argv it hands to its capped runner.
        'ribs/host/src/builtins/grepTool.ts: gitInvocation',
        'ribs/host/src/builtins/grepTool.ts: argv',
        // The projects rib, through the rib exec.
        'ribs/projects/src/index.ts: rib exec',
        'ribs/projects/src/inspect.ts: rib exec',
        // runGit callers: swarm write mode, doctor, the projects subgraph (state, clone/init, worktrees).
        'swarms/src/write/git.ts: runGit',
        'stack/src/doctor.ts: runGit',
        'subgraphs/projects/src/git/gitState.ts: runGit',
        'subgraphs/projects/src/project/project.service.ts: runGit',
        'subgraphs/projects/src/workspace/workspace.service.ts: runGit',
      ].sort(),
    );
  });

  it('spawns git directly only with the arguments and environment of a hardened invocation built in that file', () => {
    for (const [file, marker] of [
      ['platform/src/git/runGit.ts', /const invocation = await gitInvocation\(/],
      ['ribs/host/src/exec/createExec.ts', /const git = await gitInvocation\(args/],
      ['ribs/host/src/builtins/grepTool.ts', /const git = await gitInvocation\(/],
    ] as const) {
      const text = readFileSync(join(root, file), 'utf8');
      expect({ file, hardened: marker.test(text) }).toEqual({ file, hardened: true });
      // …and the spawned arguments are the invocation's, never the caller's raw ones.
      for (const line of text.split('\n').filter((l) => gitStart(l) === 'spawn' || gitStart(l) === 'argv')) {
        expect({ file, line: line.trim(), usesInvocation: /\b(invocation|git)\.args\b/.test(line) }).toMatchObject({ usesInvocation: true });
      }
    }
  });

  it('recognises each way of starting git (the inventory cannot go blind)', () => {
    expect(
      [
        "await runGit(['status'], { cwd })",
        "const git = await gitInvocation(args, opts)",
        "exec.runText('git', ['log'])",
        "spawn('git', ['fetch'])",
        "execFileSync('/usr/bin/git', ['clone', url])",
        "argv: ['git', 'log']",
        "spawn('bash', ['-c', 'git fetch origin'])",
        "spawn('node', ['x.js'])",
      ].map(gitStart),
    ).toEqual(['runGit', 'gitInvocation', 'rib exec', 'spawn', 'spawn', 'argv', 'shell', undefined]);
  });
});
