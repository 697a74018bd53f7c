import { heapFlags } from './heapFlags';

describe('heapFlags', () => {
  it('keeps only the heap size settings of a command line, in order', () => {
    expect(heapFlags(['--max-semi-space-size=64', '-r', './scripts/register.js', '--cpu-prof', '--max-old-space-size=4096', '--inspect'])).toEqual([
      '--max-semi-space-size=64',
      '--max-old-space-size=4096',
    ]);
  });

  it('passes nothing on when the process was started without them (or with a malformed one)', () => {
    expect(heapFlags(['-r', './scripts/register.js', '--max-semi-space-size'])).toEqual([]);
  });
});
