import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectData, PROJECT_FIELDS, startProjectsHarness, type ProjectsHarness } from '../../test/support/projectsHarness';

const CREATE = `mutation ($input: CreateProjectInput!) { createProject(input: $input) { ${PROJECT_FIELDS} } }`;
const HOOKS = ['pre-commit', 'commit-msg', 'post-commit'];

/** Hooks that leave `marker` behind if any of them ever runs. */
function writeHooks(dir: string, marker: string) {
  mkdirSync(dir, { recursive: true });
  for (const hook of HOOKS) {
    writeFileSync(join(dir, hook), `#!/bin/sh\ntouch '${marker}'\n`);
    chmodSync(join(dir, hook), 0o755);
  }
}

let h: ProjectsHarness;
let markers: { hooksPath: string; template: string };

beforeAll(async () => {
  h = await startProjectsHarness({
    prepare: (tmp) => {
      markers = { hooksPath: join(tmp, 'ran-hooksPath-hook'), template: join(tmp, 'ran-template-hook') };
      writeHooks(join(tmp, 'global-hooks'), markers.hooksPath);
      writeHooks(join(tmp, 'template', 'hooks'), markers.template);
      return { gitConfig: ['[core]', `\thooksPath = ${join(tmp, 'global-hooks')}`, '[init]', `\ttemplateDir = ${join(tmp, 'template')}`] };
    },
  });
});
afterAll(() => h?.close());

describe('createProject: it touches no project files', () => {
  it('initializes without running the global hooksPath hooks or copying template hooks', async () => {
    const project = expectData(await h.gql<{ createProject: { rootPath: string; headCommit: string } }>(CREATE, { input: { name: 'hooked' } }))
      .createProject;
    expect(project.headCommit).toMatch(/^[0-9a-f]{40}$/);
    expect(existsSync(markers.hooksPath)).toBe(false);
    expect(existsSync(markers.template)).toBe(false);
    for (const hook of HOOKS) expect(existsSync(join(project.rootPath, '.git', 'hooks', hook))).toBe(false);
  });
});
