import { createLogger, logFormatFromEnv } from './logger';

/** A pino destination that keeps every line. */
function sink(): { lines: string[]; write(line: string): void } {
  const lines: string[] = [];
  return { lines, write: (line) => void lines.push(line) };
}

describe('one log', () => {
  it('writes JSON records with an ISO time and the service once, also from a child bound to its own service', () => {
    const out = sink();
    const root = createLogger(undefined, 'info', out);
    root.child({ service: 'mesh' }).info('Subgraphs: runs');
    root.child({ service: 'runs' }).child({ request: 1 }).warn({ url: 'http://127.0.0.1:4003/graphql' }, 'runs listening');
    createLogger('gateway', 'info', out).info('gateway listening');
    root.child({ service: 'mesh' }).debug('not at info');

    expect(out.lines).toHaveLength(3);
    for (const line of out.lines) {
      expect(line.split('"service":')).toHaveLength(2);
      expect(JSON.parse(line).time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    expect(out.lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ level: 30, service: 'mesh', msg: 'Subgraphs: runs' }),
      expect.objectContaining({ level: 40, service: 'runs', request: 1, url: 'http://127.0.0.1:4003/graphql', msg: 'runs listening' }),
      expect.objectContaining({ level: 30, service: 'gateway', msg: 'gateway listening' }),
    ]);
  });

  it('picks the format from KEELSON_LOG_FORMAT, else readable on a terminal and JSON on a pipe', () => {
    expect([
      logFormatFromEnv({}, true),
      logFormatFromEnv({}, false),
      logFormatFromEnv({ KEELSON_LOG_FORMAT: 'auto' }, true),
      logFormatFromEnv({ KEELSON_LOG_FORMAT: 'json' }, true),
      logFormatFromEnv({ KEELSON_LOG_FORMAT: 'pretty' }, false),
    ]).toEqual(['pretty', 'json', 'pretty', 'json', 'pretty']);
  });
});
