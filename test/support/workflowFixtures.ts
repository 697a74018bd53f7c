// Workflow files and process probes the crash, restart and cluster suites share: one definition of
// "a run that crashes once mid-node" and "a run held at a gate", so each suite tests the same thing.
import { readdirSync, readFileSync } from 'node:fs';

/**
 * `crash-once`: each node appends its id to effects.log at its very end (its one side effect). `slow`
 * notes every start in starts.log and, on its first attempt only, sleeps `firstAttemptSeconds` under a
 * process named `keelson-slow-<runId>` — long enough for a test to kill the worker running it. Commands
 * run in the sandbox's own pid namespace, where `$$` is not a host pid: the node names its process.
 */
export function crashOnceWorkflow(firstAttemptSeconds = 30): string {
  return `
name: crash-once
nodes:
  - id: first
    type: bash
    bash: echo "first" >> "$ARTIFACTS_DIR/effects.log"
  - id: slow
    type: bash
    depends_on: [first]
    bash: |
      echo "slow attempt $KEELSON_ATTEMPT" >> "$ARTIFACTS_DIR/starts.log"
      if [ "$KEELSON_ATTEMPT" = 1 ]; then (exec -a "keelson-slow-$KEELSON_RUN_ID" sleep ${firstAttemptSeconds}); else sleep 1; fi
      echo "slow" >> "$ARTIFACTS_DIR/effects.log"
  - id: last
    type: bash
    depends_on: [slow]
    bash: echo "last" >> "$ARTIFACTS_DIR/effects.log"
`;
}

/**
 * `restart-gated`: a step, an approval gate, and a step after it that appends one line (`after` and
 * the time in ms) to effects.log — its one side effect, so a line count says how often it acted.
 */
export const gatedWorkflow = `
name: restart-gated
nodes:
  - id: before
    type: bash
    bash: echo before
  - id: gate
    type: approval
    depends_on: [before]
    prompt: Go on?
  - id: after
    type: bash
    depends_on: [gate]
    bash: echo "after $(date +%s%3N)" >> "$ARTIFACTS_DIR/effects.log"
`;

/** Live (not zombie) processes whose command line starts with `marker` (a node's `exec -a` name). */
export function pidsMarked(marker: string): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(marker)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') found.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}
