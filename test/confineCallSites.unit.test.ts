import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { shippedSources } from './support/sourceFiles';
import { BUILTIN_CODING_TOOLS } from '@keelson/host';

// Every path an agent, a workflow or a caller names goes through the mesh's one path resolver
// (`canonicalPath` / `confinePath` / `checkPath` of @keelson/platform): the coding tools, the
// path-confinement policy, harness attachments, run artifacts, project roots and worktree paths.
// This test lists the call sites; a new one (or a path resolved some other way) fails it until it is
// reviewed and added here.

const root = join(__dirname, '..');
const shipped = shippedSources(root).filter((f) => !f.startsWith('platform/src/confine/'));
const text = (file: string) => readFileSync(join(root, file), 'utf8');

/** The resolver's entry points, and the rib host's wrappers over them. */
const RESOLVER = /\b(canonicalPath|canonicalPathAsync|confinePath|confinedPath|confinedToolPath|checkPath|isAllowed|fileWritingTool)\(/;
/** Resolving a path some other way: the platform's realpath, or the lexical `path.resolve` of a tool input. */
const OTHER_RESOLUTION = /\brealpath(Sync)?(\.native)?\(/;

describe('every path agents and callers name', () => {
  it('is resolved at these reviewed call sites, through the one resolver', () => {
    const sites = shipped.filter((f) => RESOLVER.test(text(f)) && !/function checkPath\(field/.test(text(f))).sort();
    expect(sites).toEqual(
      [
        // The harness: a turn's cwd and its attachments; the CLIs' session files (pi's, and any JSONL
        // transcript a store reads), which a CLI writes and an agent could replace with a link.
        'harness/src/confine.ts',
        'harness/src/drivers/pi.ts',
        'harness/src/plane/controlPlane.ts',
        'harness/src/stores/jsonl.ts',
        // The rib host: the wrappers, each coding tool, the builtin:path_confinement policy.
        'ribs/host/src/builtins/bashTool.ts',
        'ribs/host/src/builtins/builtinTool.ts',
        'ribs/host/src/builtins/confine.ts',
        'ribs/host/src/builtins/editTool.ts',
        'ribs/host/src/builtins/globTool.ts',
        'ribs/host/src/builtins/grepTool.ts',
        'ribs/host/src/builtins/readTool.ts',
        'ribs/host/src/builtins/writeTool.ts',
        'ribs/host/src/policy/pathConfinement.ts',
        // The projects subgraph: project roots (create, clone) and worktree paths.
        'subgraphs/projects/src/fs/paths.ts',
        'subgraphs/projects/src/fs/projectRoot.ts',
        'subgraphs/projects/src/project/project.service.ts',
        'subgraphs/projects/src/workspace/workspace.service.ts',
        // Run artifacts (a node's declared outputs).
        'temporal/src/activities/runs/artifacts.ts',
      ].sort(),
    );
  });

  it('confines each builtin coding tool: the list of tools and the list of files that confine them agree', () => {
    const byTool: Record<(typeof BUILTIN_CODING_TOOLS)[number], { file: string; confines: RegExp }> = {
      Read: { file: 'ribs/host/src/builtins/readTool.ts', confines: /confinedToolPath\(ctx, input\.path\)/ },
      Write: { file: 'ribs/host/src/builtins/writeTool.ts', confines: /fileWritingTool\(/ },
      Edit: { file: 'ribs/host/src/builtins/editTool.ts', confines: /fileWritingTool\(/ },
      Glob: { file: 'ribs/host/src/builtins/globTool.ts', confines: /confinedToolPath\(ctx,/ },
      Grep: { file: 'ribs/host/src/builtins/grepTool.ts', confines: /confinedToolPath\(ctx, input\.path/ },
      Bash: { file: 'ribs/host/src/builtins/bashTool.ts', confines: /confinedToolPath\(ctx, ctx\.cwd\)/ },
    };
    expect(Object.keys(byTool).sort()).toEqual([...BUILTIN_CODING_TOOLS].sort());
    for (const [tool, { file, confines }] of Object.entries(byTool)) expect({ tool, confined: confines.test(text(file)) }).toEqual({ tool, confined: true });
    // The writing wrapper confines for writing (.git and .keelson refused), not only for reading.
    expect(text('ribs/host/src/builtins/builtinTool.ts')).toMatch(/confinedToolPath\(ctx, input\.path, 'write'\)/);
  });

  it('resolves no path another way (realpath) outside the sandbox, which mounts what the resolver allowed', () => {
    const others = shipped.filter((f) => OTHER_RESOLUTION.test(text(f))).sort();
    expect(others).toEqual([
      // Rib discovery: package folders of installed ribs, not paths an agent names.
      'ribs/host/src/discovery/discoverInstalledRibs.ts',
      // The sandbox: bind mounts of folders already confined (and its own install root).
      'platform/src/sandbox/sandbox.ts',
    ].sort());
  });
});
