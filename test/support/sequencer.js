// The order test files start in: longest first, so the two workers finish close together instead of
// one running a two-minute e2e file alone at the end.
//
// Jest's own sequencer orders by the durations of the previous run, which it keeps in its cache
// directory; a fresh clone (CI) has none, and Jest falls back to file size, which starts the short
// files of the long scenarios (the five real CLIs, the swarm crashes) last. This sequencer reads,
// per file, the duration of Jest's cache when there is one, else the checked-in table
// test/support/durations.json ({ "<path from the repo root>": seconds on a quiet 2-core machine }).
// A file in neither (a new one) starts first, since it may be long; among those, larger files first.
// Files that failed in the cached previous run still start before all others, as with Jest's default.
//
// Refresh the table from a whole run: `npx jest --json --outputFile=/tmp/jest.json` then
// `node scripts/testDurations.js /tmp/jest.json`.
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;
const table = require('./durations.json');

class DurationSequencer extends Sequencer {
  sort(tests) {
    const seconds = (test) => {
      const cached = this.time(test);
      if (cached != null) return cached / 1000;
      const listed = table[path.relative(test.context.config.rootDir, test.path).split(path.sep).join('/')];
      return listed ?? Number.POSITIVE_INFINITY;
    };
    const sizes = new Map();
    const size = (test) => {
      if (!sizes.has(test.path)) sizes.set(test.path, test.context.hasteFS.getSize(test.path) ?? 0);
      return sizes.get(test.path);
    };
    const keyed = tests.map((test) => ({ test, failed: this.hasFailed(test), seconds: seconds(test) }));
    keyed.sort((a, b) => {
      if (a.failed !== b.failed) return a.failed ? -1 : 1;
      if (a.seconds !== b.seconds) return a.seconds > b.seconds ? -1 : 1;
      return size(b.test) - size(a.test);
    });
    return keyed.map((k) => k.test);
  }
}

module.exports = DurationSequencer;
