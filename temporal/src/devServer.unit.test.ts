import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { ensureTemporalCli, findTemporalCli, startDevServer } from './devServer';

describe('findTemporalCli / ensureTemporalCli', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keelson-cli-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function fakeCli(folder: string, executable = true): Promise<string> {
    await mkdir(folder, { recursive: true });
    const file = join(folder, 'temporal');
    await writeFile(file, '#!/bin/sh\n');
    await chmod(file, executable ? 0o755 : 0o644);
    return file;
  }

  it('prefers a temporal on the search path over the one in <home>/bin', async () => {
    const onPath = await fakeCli(join(dir, 'path'));
    await fakeCli(join(dir, 'home', 'bin'));

    await expect(findTemporalCli({ home: join(dir, 'home'), searchPath: [join(dir, 'empty'), join(dir, 'path')].join(delimiter) })).resolves.toBe(
      onPath,
    );
  });

  it('falls back to <home>/bin/temporal, skipping files that are not executable', async () => {
    await fakeCli(join(dir, 'path'), false);
    const inHome = await fakeCli(join(dir, 'home', 'bin'));

    await expect(findTemporalCli({ home: join(dir, 'home'), searchPath: join(dir, 'path') })).resolves.toBe(inHome);
  });

  it('finds nothing when neither place has it', async () => {
    await expect(findTemporalCli({ home: join(dir, 'home'), searchPath: join(dir, 'path') })).resolves.toBeUndefined();
  });

  it('returns an existing CLI without building', async () => {
    const inHome = await fakeCli(join(dir, 'home', 'bin'));

    await expect(ensureTemporalCli({ home: join(dir, 'home'), searchPath: '' })).resolves.toBe(inHome);
  });

  it('says how to get the CLI when it must be built and go is missing', async () => {
    const savedPath = process.env.PATH;
    process.env.PATH = join(dir, 'no-go-here');
    const log: string[] = [];
    try {
      await expect(ensureTemporalCli({ home: join(dir, 'home'), searchPath: '', log: (line) => log.push(line) })).rejects.toThrow(
        /the Go toolchain \("go"\) is not on PATH[\s\S]*https:\/\/go\.dev\/dl[\s\S]*home\/bin\/temporal/,
      );
    } finally {
      process.env.PATH = savedPath;
    }
    expect(log[0]).toMatch(/^Temporal CLI not found; building github\.com\/temporalio\/cli\/cmd\/temporal@v1\.5\.1/);
  });
});

describe('startDevServer', () => {
  it('fails naming the command when the CLI path does not exist', async () => {
    await expect(startDevServer({ cli: '/nonexistent/temporal', port: 0, uiPort: 0 })).rejects.toThrow(
      /Temporal dev server \(\/nonexistent\/temporal server start-dev .*--search-attribute KeelsonKind=Keyword.*\) did not become ready at 127\.0\.0\.1:\d+: spawn \/nonexistent\/temporal ENOENT/,
    );
  });
});
