import type { RibHost } from '../ribHost';
import { errorMessage } from '../errors';
import type { WarningSink } from '../warnings';
import type { RunsPortRun } from './runsPort';

/**
 * A run's structured output: the trimmed output of the last node (in definition order) that
 * SUCCEEDED and is not an approval gate, parsed as JSON when it is JSON, else the text itself.
 * Undefined when no such node produced output.
 */
export function runOutput(run: Pick<RunsPortRun, 'nodes'>): unknown {
  const producer = [...run.nodes].reverse().find((n) => n.status === 'SUCCEEDED' && n.type !== 'approval' && n.output !== null && n.output.trim() !== '');
  if (!producer) return undefined;
  const text = producer.output!.trim();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** How many settled publications are remembered, so a run is published once per launch. */
const REMEMBERED = 1000;

/**
 * Publishes a succeeded run of a snapshot-bound workflow to its key, through the rib's `validate`
 * (a rejected payload is dropped, the prior version kept, a warning logged). Whoever sees the run
 * settle first (`refreshWorkflow`, the cadence heartbeat, the run-event consumer) publishes; the
 * others get the same promise, so one launch publishes at most once per process.
 */
export class BoundOutputs {
  private readonly published = new Map<string, Promise<'published' | 'dropped' | 'unbound'>>();

  constructor(
    private readonly host: () => RibHost | undefined,
    private readonly warn: WarningSink,
  ) {}

  publish(run: RunsPortRun): Promise<'published' | 'dropped' | 'unbound'> {
    if (run.status !== 'SUCCEEDED' || !run.ribId) return Promise.resolve('unbound');
    const entry = this.host()?.workflows().find((e) => e.ribId === run.ribId && e.name === run.workflowName && e.publish);
    if (!entry?.publish) return Promise.resolve('unbound');
    const key = `${run.id}\u0000${run.launch}`;
    const known = this.published.get(key);
    if (known) return known;
    const publish = entry.publish;
    const ribId = run.ribId;
    const done = (async () => {
      const value = runOutput(run);
      if (value === undefined) {
        this.warn({ stage: 'runtime', rule: 'bound-output', ribId, message: `run ${run.id} of '${run.workflowName}' produced no output for ${entry.bindSnapshotKey}; the prior version stands` });
        return 'dropped' as const;
      }
      try {
        // The hub warns about a rejected or unstorable payload itself.
        return (await publish(value)) ? ('published' as const) : ('dropped' as const);
      } catch (err) {
        this.warn({ stage: 'runtime', rule: 'bound-output', ribId, message: `publishing run ${run.id} to ${entry.bindSnapshotKey} failed: ${errorMessage(err)}` });
        return 'dropped' as const;
      }
    })();
    this.published.set(key, done);
    if (this.published.size > REMEMBERED) this.published.delete(this.published.keys().next().value!);
    return done;
  }
}
