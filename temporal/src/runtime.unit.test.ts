import { createLogger } from '@keelson/service';
import { runtimeLogFunction } from './runtime';

describe('the Temporal SDK in the one log', () => {
  it("routes the Temporal SDK's lines into the log as records of their level, its routine start notice at debug", () => {
    const lines: string[] = [];
    const out = { write: (line: string) => void lines.push(line) };
    const worker = createLogger('worker', 'debug', out);
    const write = runtimeLogFunction(worker);
    write({ level: 'WARN', message: 'Activity failed', meta: { activityType: 'runCommandNode' }, timestampNanos: 0n });
    write({ level: 'WARN', message: 'No workflows registered, not polling for workflow tasks', meta: { taskQueue: 'q.ribs' }, timestampNanos: 0n });
    write({ level: 'TRACE', message: 'polling', timestampNanos: 0n });
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ level: 40, service: 'worker', sdk: 'temporal', activityType: 'runCommandNode', msg: 'Activity failed' }),
      expect.objectContaining({ level: 20, sdk: 'temporal', taskQueue: 'q.ribs', msg: 'No workflows registered, not polling for workflow tasks' }),
      expect.objectContaining({ level: 20, msg: 'polling' }),
    ]);
  });
});
