import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { confinedToolPath, ToolRefusal } from '../src/builtins/confine';
import { openForRead } from '../src/builtins/textFile';
import { writeConfined } from '../src/builtins/writeTool';

// The race between checking a path and opening it: the path is confined, then (as an agent's own
// Bash could, between two tool calls or during one) a folder on the way is replaced by a link out of
// the root, then the tool opens it. The descriptor is checked against the confined path: refused,
// and nothing outside is read, emptied or created.

let base: string;
let project: string;
let outside: string;
const ctx = () => ({ cwd: project, allowedDirectories: [project] });

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-race-')));
  project = join(base, 'project');
  outside = join(base, 'outside');
  mkdirSync(join(project, 'sub'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(project, 'sub', 'notes.txt'), 'inside\n');
  writeFileSync(join(outside, 'notes.txt'), 'precious\n');
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

/** `sub` replaced by a link to the outside folder, after the check. */
const swap = () => {
  renameSync(join(project, 'sub'), join(project, 'sub-before'));
  symlinkSync(outside, join(project, 'sub'));
};

describe('a folder swapped for a link between the check and the open', () => {
  it('is refused for a write over an existing file: the file outside is not emptied nor written', async () => {
    const path = confinedToolPath(ctx(), 'sub/notes.txt', 'write');
    swap();
    await expect(writeConfined(path, 'pwned')).rejects.toThrow(ToolRefusal);
    await expect(writeConfined(path, 'pwned')).rejects.toThrow(/changed while it was being opened .*a folder on the way was replaced by a link/);
    expect(readFileSync(join(outside, 'notes.txt'), 'utf8')).toBe('precious\n');
    expect(readFileSync(join(project, 'sub-before', 'notes.txt'), 'utf8')).toBe('inside\n');
  });

  it('is refused for a new file, and the file it created outside is removed again', async () => {
    const path = confinedToolPath(ctx(), 'sub/new.txt', 'write');
    swap();
    await expect(writeConfined(path, 'pwned')).rejects.toThrow(ToolRefusal);
    expect(existsSync(join(outside, 'new.txt'))).toBe(false);
  });

  it('is refused for a read: nothing outside is returned', async () => {
    const path = confinedToolPath(ctx(), 'sub/notes.txt');
    swap();
    await expect(openForRead(path)).rejects.toThrow(ToolRefusal);
  });

  it('changes nothing when no swap happened: the checked file is written and read', async () => {
    const path = confinedToolPath(ctx(), 'sub/notes.txt', 'write');
    await expect(writeConfined(path, 'new text\n')).resolves.toBe('overwrote');
    await expect(writeConfined(confinedToolPath(ctx(), 'sub/deeper/made.txt', 'write'), 'made\n')).resolves.toBe('created');
    const handle = await openForRead(path);
    try {
      expect(await handle.readFile('utf8')).toBe('new text\n');
    } finally {
      await handle.close();
    }
  });
});
