import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { artifactPaths, readArtifacts } from './artifacts';

describe('gate artifacts', () => {
  let dir: string;
  let artifacts: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keelson-artifacts-'));
    artifacts = join(dir, 'artifacts');
    await mkdir(join(artifacts, 'sub'), { recursive: true });
    await writeFile(join(artifacts, 'plan.md'), '# plan\n');
    await writeFile(join(artifacts, 'big.txt'), 'y'.repeat(40_000));
    await writeFile(join(dir, 'secret.txt'), 'outside');
    await symlink(join(dir, 'secret.txt'), join(artifacts, 'link.txt'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('names the distinct files a prompt mentions under $ARTIFACTS_DIR, at most 4, without sentence punctuation', () => {
    expect(artifactPaths('See $ARTIFACTS_DIR/plan.md. Also ${ARTIFACTS_DIR}/sub/notes.txt, $ARTIFACTS_DIR/plan.md and "$ARTIFACTS_DIR/a" $ARTIFACTS_DIR/b $ARTIFACTS_DIR/c')).toEqual([
      'plan.md',
      'sub/notes.txt',
      'a',
      'b',
    ]);
    expect(artifactPaths('no files here, only $HOME/x')).toEqual([]);
  });

  it('reads each file cut to 32,000 characters, with an error for missing, directories and escapes', async () => {
    await expect(
      readArtifacts(artifacts, 'Check $ARTIFACTS_DIR/plan.md $ARTIFACTS_DIR/big.txt $ARTIFACTS_DIR/missing.md $ARTIFACTS_DIR/sub'),
    ).resolves.toEqual([
      { path: 'plan.md', text: '# plan\n', truncated: false },
      { path: 'big.txt', text: 'y'.repeat(32_000), truncated: true },
      { path: 'missing.md', error: 'not found' },
      { path: 'sub', error: 'is a directory' },
    ]);
    await expect(readArtifacts(artifacts, '$ARTIFACTS_DIR/../secret.txt and $ARTIFACTS_DIR/link.txt')).resolves.toEqual([
      { path: '../secret.txt', error: "outside the run's artifacts directory" },
      { path: 'link.txt', error: "outside the run's artifacts directory (symlink)" },
    ]);
  });
});
