import { EVENTS_CHANNEL } from '@keelson/schema';
import { silentLogger, type Logger } from '@keelson/service';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db';
import { settled, sleep, untilTrue as until } from '../../../test/support/until';
import { EventNotifier, type NotifierWatcher } from './notifier';

jest.setTimeout(20_000);

describe('EventNotifier', () => {
  let db: TestDatabase;
  const open: EventNotifier[] = [];
  let seq = 0;
  const make = (extra: { reconnectDelayMs?: number; applicationName?: string; log?: Logger; url?: string } = {}) => {
    const n = new EventNotifier({ url: db.url, log: silentLogger(), ...extra });
    open.push(n);
    return n;
  };
  const notify = (payload: string, channel = EVENTS_CHANNEL) => db.query('SELECT pg_notify($1, $2)', [channel, payload]);
  const backends = async (app: string) =>
    (await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()', [app])).map((r) => r.pid);
  const uniqueApp = () => `kl-notifier-test-${++seq}`;

  beforeAll(async () => {
    db = await createTestDatabase('keelson_notifier');
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((n) => n.stop()));
  });
  afterAll(async () => {
    await db.drop();
  });

  it('connects once for two ready() calls, under the default application name unless told another', async () => {
    const n = make();
    await Promise.all([n.ready(), n.ready()]);
    await n.ready();
    expect(await backends('keelson-listener')).toEqual([n.backendPid]);
    const app = uniqueApp();
    const custom = make({ applicationName: app });
    await custom.ready();
    expect(await backends(app)).toEqual([custom.backendPid]);
  });

  it('after stop() ready() resolves without connecting, and isStopped is set', async () => {
    const app = uniqueApp();
    const n = make({ applicationName: app });
    expect(n.isStopped).toBe(false);
    await n.stop();
    expect(n.isStopped).toBe(true);
    await n.ready();
    expect(n.backendPid).toBeUndefined();
    expect(await backends(app)).toEqual([]);
    const unreachable = make({ url: 'postgres://postgres@127.0.0.1:1/nowhere' });
    await unreachable.stop();
    await expect(unreachable.ready()).resolves.toBeUndefined();
  });

  it('start() whose first connect fails after stop() does not go on retrying', async () => {
    const warns: string[] = [];
    const log = { ...silentLogger(), warn: (_o: unknown, msg: string) => warns.push(msg) } as unknown as Logger;
    const n = make({ url: 'postgres://postgres@127.0.0.1:1/nowhere', reconnectDelayMs: 20, log });
    const started = n.start();
    await n.stop();
    await started;
    await sleep(200);
    expect(warns).toEqual(['event LISTEN failed; retrying']);
  });

  it('a failed connect rejects and a later ready() tries again', async () => {
    const n = make({ url: 'postgres://postgres@127.0.0.1:1/nowhere' });
    await expect(n.ready()).rejects.toThrow();
    await expect(n.ready()).rejects.toThrow();
    const bad = make({ url: db.url.replace(/\/[^/]*$/, '/keelson_no_such_db') });
    await expect(bad.ready()).rejects.toThrow(/does not exist/);
  });

  it('start() on an unreachable server warns and retries with a doubling delay', async () => {
    const warns: string[] = [];
    const times: number[] = [];
    const causes: unknown[] = [];
    const log = { ...silentLogger(), warn: (o: { err?: unknown }, msg: string) => (warns.push(msg), times.push(Date.now()), causes.push(o.err)) } as unknown as Logger;
    const n = make({ url: 'postgres://postgres@127.0.0.1:1/nowhere', reconnectDelayMs: 50, log });
    await n.start();
    expect(warns).toEqual(['event LISTEN failed; retrying']);
    await until('three retries', () => warns.length >= 4);
    expect(warns.slice(1, 4)).toEqual(Array(3).fill('event LISTEN reconnect failed'));
    // Each warning carries the connect's error (what an operator reads to see why).
    expect(causes.slice(0, 4)).toEqual(Array(4).fill(expect.objectContaining({ code: 'ECONNREFUSED' })));
    const gaps = times.slice(1, 4).map((t, i) => t - times[i]);
    expect(gaps[0]).toBeGreaterThanOrEqual(45);
    expect(gaps[1]).toBeGreaterThanOrEqual(95);
    expect(gaps[2]).toBeGreaterThanOrEqual(195);
    await n.stop();
    const count = warns.length;
    await sleep(600);
    expect(warns.length).toBe(count);
  });

  it('parses stream:seq:type payloads (and the older stream:seq), keeps the highest head and ignores other channels and empty payloads', async () => {
    const n = make();
    const events: Array<[string, number, string | undefined]> = [];
    const remove = n.watch({ event: (s, q, t) => events.push([s, q, t]) });
    await n.ready();
    await notify('a:7:PROJECT_TRUSTED');
    await notify('a:3');
    await notify('a:x:T');
    await notify('a:12x:T');
    await notify('');
    await notify('other:9:T', 'some_other_channel');
    await notify('c:2:odd:type');
    await until('c', () => events.length >= 5);
    expect(events.slice(0, 4)).toEqual([['a', 7, 'PROJECT_TRUSTED'], ['a', 3, undefined], ['a', NaN, 'T'], ['a', NaN, 'T']]);
    expect(events[4]).toEqual(['c', 2, 'odd:type']);
    expect(n.headOf('a')).toBe(7);
    expect(n.headOf('c')).toBe(2);
    expect(n.headOf('other')).toBe(0);
    expect(n.headOf('')).toBe(0);
    remove();
    await notify('c:5:T');
    await until('head', () => n.headOf('c') === 5);
    expect(events).toHaveLength(5);
  });

  it('wait() resolves at once when changed since the ticket, wakes only waiters of that stream, and on abort', async () => {
    const n = make();
    await n.ready();
    const ac = new AbortController();
    const t = n.ticket('s1');
    expect(t).toEqual({ stream: 's1', version: 0, epoch: 1 });
    const w1 = n.wait(t, ac.signal);
    const w2 = n.wait(n.ticket('s2'), ac.signal);
    expect(await settled(w1)).toBe(false);
    await notify('s1:1');
    await until('w1', () => settled(w1));
    expect(await settled(w2)).toBe(false);
    expect(n.ticket('s1').version).toBe(1);
    expect(await settled(n.wait(t, new AbortController().signal))).toBe(true);
    ac.abort();
    expect(await settled(w2)).toBe(true);
    expect(await settled(n.wait(n.ticket('s3'), ac.signal))).toBe(true);
  });

  it('stop() wakes all waiters and later waits resolve at once', async () => {
    const n = make();
    await n.ready();
    const pid = n.backendPid;
    const w = n.wait(n.ticket('x'), new AbortController().signal);
    expect(await settled(w)).toBe(false);
    await n.stop();
    expect(await settled(w)).toBe(true);
    expect(await settled(n.wait(n.ticket('x'), new AbortController().signal))).toBe(true);
    expect(n.backendPid).toBeUndefined();
    await until('backend gone', async () => !(await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE pid = $1', [pid])).length);
  });

  it('reconnects after its backend is terminated: lost, then listening with a new pid, waking waiters', async () => {
    const warned: [unknown, string][] = [];
    const n = make({ reconnectDelayMs: 50, log: { ...silentLogger(), warn: (o: { err?: unknown }, msg: string) => warned.push([o.err, msg]) } as unknown as Logger });
    const calls: string[] = [];
    const watcher: NotifierWatcher = { lost: () => calls.push('lost'), listening: () => calls.push('listening') };
    n.watch(watcher);
    await n.ready();
    expect(calls).toEqual(['listening']);
    const pid = n.backendPid!;
    const w = n.wait(n.ticket('q'), new AbortController().signal);
    await db.query('SELECT pg_terminate_backend($1)', [pid]);
    await until('lost', () => calls.includes('lost'));
    expect(n.backendPid).toBeUndefined();
    await until('listening again', () => calls.length >= 3);
    expect(calls).toEqual(['listening', 'lost', 'listening']);
    // The loss is logged once, with the server's reason when pg reports its error before the socket's
    // end (57P01: terminated by an administrator), or bare when the end comes first.
    expect(warned.map(([, msg]) => msg)).toEqual(['event LISTEN connection lost; reconnecting']);
    expect([undefined, '57P01']).toContain((warned[0]![0] as { code?: string } | undefined)?.code);
    expect(n.backendPid).toBeDefined();
    expect(n.backendPid).not.toBe(pid);
    expect(await settled(w)).toBe(true);
    expect(n.ticket('q').epoch).toBe(2);
    await notify('q:4');
    await until('head after reconnect', () => n.headOf('q') === 4);
  });

  it('a ticket taken before a reconnect counts as changed after it, with no notification since', async () => {
    const n = make({ reconnectDelayMs: 50 });
    await n.ready();
    const before = n.ticket('r');
    await db.query('SELECT pg_terminate_backend($1)', [n.backendPid!]);
    await until('listening again', () => n.backendPid !== undefined && n.ticket('r').epoch === before.epoch + 1);
    // Whatever committed while no LISTEN was active was not told: a waiter from before must re-read.
    expect(n.ticket('r').version).toBe(before.version);
    expect(await settled(n.wait(before, new AbortController().signal))).toBe(true);
    expect(await settled(n.wait(n.ticket('r'), new AbortController().signal))).toBe(false);
  });

  it('stop() during a pending reconnect prevents reconnecting', async () => {
    const app = uniqueApp();
    const n = make({ reconnectDelayMs: 300, applicationName: app });
    await n.ready();
    await db.query('SELECT pg_terminate_backend($1)', [n.backendPid]);
    await until('lost', () => n.backendPid === undefined);
    await n.stop();
    await sleep(500);
    expect(await backends(app)).toEqual([]);
  });

  it('a connect that completes after stop() is ended', async () => {
    const app = uniqueApp();
    const n = make({ applicationName: app });
    const ready = n.ready();
    await n.stop();
    await ready;
    expect(n.backendPid).toBeUndefined();
    await until('no backend', async () => (await backends(app)).length === 0);
  });
});
