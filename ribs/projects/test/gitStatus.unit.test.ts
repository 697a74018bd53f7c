import { parseGitStatus, parseLog, parseWorktrees } from '../src/gitStatus';
import { buildBadge, buildBoard, describeRow, type ProjectRow } from '../src/board';

const NUL = '\0';

describe('parseGitStatus (git status --porcelain=v2 --branch -z)', () => {
  it('reads the branch, upstream and ahead/behind headers', () => {
    const out = ['# branch.oid 1234567890abcdef1234567890abcdef12345678', '# branch.head main', '# branch.upstream origin/main', '# branch.ab +2 -3', ''].join(NUL);
    expect(parseGitStatus(out)).toMatchObject({ branch: 'main', head: '1234567890abcdef1234567890abcdef12345678', upstream: 'origin/main', ahead: 2, behind: 3, files: [] });
  });

  it('reads an unborn branch and a detached HEAD', () => {
    expect(parseGitStatus(['# branch.oid (initial)', '# branch.head main', ''].join(NUL))).toMatchObject({ branch: 'main', head: null, ahead: null });
    expect(parseGitStatus(['# branch.oid abc', '# branch.head (detached)', ''].join(NUL))).toMatchObject({ branch: null, head: 'abc' });
  });

  it('counts staged, unstaged, untracked and conflicted paths, keeping spaces and rename origins', () => {
    const out = [
      '# branch.oid abc',
      '# branch.head main',
      '1 M. N... 100644 100644 100644 aaa bbb staged file.txt',
      '1 .M N... 100644 100644 100644 aaa bbb src/app.ts',
      '1 MM N... 100644 100644 100644 aaa bbb both.ts',
      '2 R. N... 100644 100644 100644 aaa bbb R100 new name.md',
      'old name.md',
      'u UU N... 100644 100644 100644 100644 aaa bbb ccc conflict.ts',
      '? notes/untracked.txt',
      '! ignored.log',
      '',
    ].join(NUL);
    const status = parseGitStatus(out);
    expect(status).toMatchObject({ staged: 3, unstaged: 2, untracked: 1, conflicted: 1 });
    expect(status.files).toEqual([
      { path: 'staged file.txt', status: 'M.' },
      { path: 'src/app.ts', status: '.M' },
      { path: 'both.ts', status: 'MM' },
      { path: 'new name.md', status: 'R.', from: 'old name.md' },
      { path: 'conflict.ts', status: 'UU' },
      { path: 'notes/untracked.txt', status: '??' },
    ]);
  });
});

describe('parseWorktrees (git worktree list --porcelain -z)', () => {
  it('reads each worktree with its branch, and a prunable one', () => {
    const out = ['worktree /repo', 'HEAD abc', 'branch refs/heads/main', '', 'worktree /home/wt/1', 'HEAD def', 'branch refs/heads/keelson/repo-1', 'prunable gitdir file points to non-existent location', '', 'worktree /home/wt/2', 'HEAD 123', 'detached', '', ''].join(NUL);
    expect(parseWorktrees(out)).toEqual([
      { path: '/repo', branch: 'main', head: 'abc', prunable: false },
      { path: '/home/wt/1', branch: 'keelson/repo-1', head: 'def', prunable: true },
      { path: '/home/wt/2', branch: null, head: '123', prunable: false },
    ]);
  });
});

describe('parseLog', () => {
  it('reads NUL-separated commits of unit-separated fields', () => {
    const out = `aaa\x1fFirst: subject\x1fAda\x1f2024-01-01T00:00:00+00:00\0\nbbb\x1fSecond\x1fBob\x1f2024-01-02T00:00:00+00:00\0`;
    expect(parseLog(out)).toEqual([
      { sha: 'aaa', subject: 'First: subject', author: 'Ada', at: '2024-01-01T00:00:00+00:00' },
      { sha: 'bbb', subject: 'Second', author: 'Bob', at: '2024-01-02T00:00:00+00:00' },
    ]);
  });
});

describe('the board', () => {
  const row = (over: Partial<ProjectRow>): ProjectRow => ({
    id: 'p1',
    name: 'alpha',
    rootPath: '/w/alpha',
    state: 'ok',
    branch: 'main',
    detached: false,
    head: 'abc',
    unborn: false,
    upstream: null,
    ahead: null,
    behind: null,
    dirty: { total: 0, staged: 0, unstaged: 0, untracked: 0, conflicted: 0, files: [], truncated: false },
    lastCommit: null,
    worktrees: 1,
    leases: [],
    lock: null,
    lockReported: true,
    ...over,
  });

  it('summarizes a row in one line', () => {
    expect(describeRow(row({ upstream: 'origin/main', ahead: 1, behind: 0, dirty: { total: 2, staged: 1, unstaged: 0, untracked: 1, conflicted: 0, files: [], truncated: false } }))).toBe(
      'main · ↑1 ↓0 · 2 changed files',
    );
    expect(describeRow(row({ state: 'not-git' }))).toBe('not a git repository');
  });

  it('totals dirty projects, leases and locks, and badges the projects that need a look', () => {
    const board = buildBoard(
      [
        row({ id: 'a', name: 'a', dirty: { total: 1, staged: 0, unstaged: 1, untracked: 0, conflicted: 0, files: [], truncated: false } }),
        row({ id: 'b', name: 'b', leases: [{ id: 'l', branch: 'keelson/b', path: '/x', purpose: null, acquiredAt: 't', checkedOut: true }], lock: { holder: 'h', purpose: 'p', acquiredAt: 't' } }),
      ],
      { available: true, version: '2.40' },
      '2024-01-01T00:00:00.000Z',
    );
    expect(board.totals).toEqual({ projects: 2, dirty: 1, leases: 1, locked: 1 });
    expect(board.sections.map((s) => [s.title, s.tone])).toEqual([
      ['a', 'warn'],
      ['b', 'caution'],
    ]);
    expect(board.sections[0]!.actions).toEqual([{ label: 'Open', action: 'open-project', payload: { projectId: 'a' } }]);
    expect(buildBadge(board)).toEqual({ count: 1, title: '1 project need a look: a' });
  });
});
