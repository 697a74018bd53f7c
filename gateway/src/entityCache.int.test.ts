import { readFileSync } from 'node:fs';
import { Supergraph } from '@apollo/federation-internals';
import { appendEvent } from '@keelson/platform';
import { EVENTS_CHANNEL } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import { openEventLogFixture, type EventLogFixture } from '../../test/support/eventLogFixture';
import { untilTrue } from '../../test/support/until';
import { supergraphForPlanning } from './auth/securityFeatures';
import type { FetchKind } from './cachePolicy';
import { supergraphPath } from './config';
import { EntityCache } from './entityCache';

jest.setTimeout(30_000);

const supergraph = Supergraph.build(supergraphForPlanning(readFileSync(supergraphPath(), 'utf8')));
const schemas = new Map(['projects', 'runs'].map((name) => [name, supergraph.subgraphs().get(name)!.schema.toGraphQLJSSchema()]));

/** The planner's fetches a client's `projects { id name }` and `projects { id trusted }` become. */
const NAMES = '{ projects { __typename id name } }';
const TRUST = '{ projects { __typename id trusted } }';
const RUNS = 'query ($representations: [_Any!]!) { _entities(representations: $representations) { ... on Project { runs { edges { node { id status } } } } } }';

describe('the entity cache drops what an event changes', () => {
  let fixture: EventLogFixture;
  let cache: EntityCache;
  let seq = 0;

  const cacheable = (subgraph: string, query: string) => {
    const kind = cache.kindOf(subgraph, query);
    if (kind.kind !== 'cacheable') throw new Error(`${query} is not cacheable: ${kind.kind}`);
    return kind;
  };
  /** Fills `query`'s answer as a fetch sent now and answered at once would. */
  const fill = (subgraph: string, query: string, answer = `{"data":{"q":${JSON.stringify(query)}}}`) => {
    cache.fill(cache.ticket(subgraph, query, cacheable(subgraph, query).fields), query, answer);
  };
  const held = (subgraph: string, query: string) => cache.get(subgraph, query) !== undefined;
  /** Appends an event (its NOTIFY names its type) and waits until `heard` (the shared cache by default) heard it. */
  const event = async (stream: string, type: string, heard: EntityCache = cache) => {
    const appended = await appendEvent(fixture.dataSource.manager, { stream, key: `k${++seq}`, type, payload: {} });
    await heard.whenSeen(stream, appended.seq);
  };

  beforeAll(async () => {
    fixture = await openEventLogFixture('entity_cache', 2);
    cache = new EntityCache({ databaseUrl: fixture.db.url, log: silentLogger(), applicationName: 'kl-entity-cache-test' });
    cache.useSchemas(schemas);
    await cache.start();
    await untilTrue('the cache listening', () => cache.listening);
  });

  afterAll(async () => {
    await cache?.stop();
    await fixture?.close();
  });

  beforeEach(() => {
    fill('projects', NAMES);
    fill('projects', TRUST);
    fill('runs', RUNS);
    expect([held('projects', NAMES), held('projects', TRUST), held('runs', RUNS)]).toEqual([true, true, true]);
  });

  it('a trust change drops only the answers selecting trust; a lock or lease event drops nothing', async () => {
    // Refilled (the only answer of its operation): still found by the drop.
    fill('projects', TRUST);
    await event('projects', 'PROJECT_TRUSTED');
    expect([held('projects', NAMES), held('projects', TRUST), held('runs', RUNS)]).toEqual([true, false, true]);
    fill('projects', TRUST);
    await event('projects', 'MUTATION_LOCK_ACQUIRED');
    await event('projects', 'WORKSPACE_RELEASED');
    expect([held('projects', NAMES), held('projects', TRUST), held('runs', RUNS)]).toEqual([true, true, true]);
  });

  it('a new project, a type the policy does not list, or a notification without a type drops every answer of the subgraph', async () => {
    await event('projects', 'PROJECT_CREATED');
    expect([held('projects', NAMES), held('projects', TRUST), held('runs', RUNS)]).toEqual([false, false, true]);
    fill('projects', NAMES);
    await event('projects', 'SOMETHING_NEW');
    expect(held('projects', NAMES)).toBe(false);
    fill('projects', NAMES);
    // The older payload, `<stream>:<seq>`: the type is unknown.
    const next = cache.seen('projects') + 1;
    await fixture.db.query('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, `projects:${next}`]);
    await cache.whenSeen('projects', next);
    expect(held('projects', NAMES)).toBe(false);
    // The real event at that sequence, then one more, so that its notification is not heard in a later test.
    await event('projects', 'MUTATION_LOCK_RELEASED');
    await event('projects', 'MUTATION_LOCK_RELEASED');
    await event('runs', 'NODE_STARTED');
    expect(held('runs', RUNS)).toBe(false);
  });

  it('refuses a fill whose fields changed while it was out, and keeps one whose fields did not', async () => {
    await event('projects', 'PROJECT_CREATED');
    const names = cache.ticket('projects', NAMES, cacheable('projects', NAMES).fields);
    const trust = cache.ticket('projects', TRUST, cacheable('projects', TRUST).fields);
    const before = { names: cache.position('projects', cacheable('projects', NAMES).fields), trust: cache.position('projects', cacheable('projects', TRUST).fields) };
    await event('projects', 'PROJECT_UNTRUSTED');
    // In-flight sharing: a trust fetch sent now does not join one sent before; a names fetch does.
    expect(cache.position('projects', cacheable('projects', NAMES).fields)).toBe(before.names);
    expect(cache.position('projects', cacheable('projects', TRUST).fields)).not.toBe(before.trust);
    cache.fill(names, NAMES, '{"data":{}}');
    cache.fill(trust, TRUST, '{"data":{}}');
    expect([held('projects', NAMES), held('projects', TRUST)]).toEqual([true, false]);
  });

  it('an evented mutation drops, as it answers, what it changes; any other mutation stops serving while out and drops everything', () => {
    const kind = (query: string) => cache.kindOf('projects', query) as Extract<FetchKind, { kind: 'mutation' }>;
    const trust = cache.mutationStarted('projects', kind('mutation ($id: ID!) { setProjectTrust(projectId: $id, trusted: true) { id } }'));
    expect([held('projects', NAMES), held('projects', TRUST)]).toEqual([true, true]);
    trust();
    expect([held('projects', NAMES), held('projects', TRUST), held('runs', RUNS)]).toEqual([true, false, true]);
    cache.mutationStarted('projects', kind('mutation ($id: ID!) { releaseMutationLock(id: $id) }'))();
    expect(held('projects', NAMES)).toBe(true);
    const create = cache.mutationStarted('projects', kind('mutation { createProject(input: { name: "x" }) { id } }'));
    expect([held('projects', NAMES), held('runs', RUNS)]).toEqual([false, false]);
    create();
    fill('projects', NAMES);
    expect([held('projects', NAMES), held('runs', RUNS)]).toEqual([true, false]);
  });

  describe('whole responses', () => {
    const names = () => cacheable('projects', NAMES).fields;
    const runs = () => cacheable('runs', RUNS).fields;
    /** Records a query that fetched NAMES then RUNS (both current now) and offers its data. */
    const respond = (key: string, data: Record<string, unknown>, between?: () => Promise<void>) => async () => {
      const context = {};
      cache.beginResponse(context);
      cache.noteFetch(context, 'projects', names(), cache.ticket('projects', NAMES, names()).stamp, 100);
      await between?.();
      cache.noteFetch(context, 'runs', runs(), cache.ticket('runs', RUNS, runs()).stamp, 100);
      cache.keepResponse(context, key, data);
    };

    it('answers with a kept response while every fetch it was made of is current, and not after one changed', async () => {
      await respond('q1', { projects: [1] })();
      expect(cache.response('q1')).toEqual({ projects: [1] });
      await event('projects', 'PROJECT_TRUSTED');
      await event('projects', 'MUTATION_LOCK_RELEASED');
      expect(cache.response('q1')).toEqual({ projects: [1] });
      await event('runs', 'NODE_STARTED');
      expect(cache.response('q1')).toBeUndefined();
      await respond('q1', { projects: [2] })();
      expect(cache.response('q1')).toEqual({ projects: [2] });
      cache.mutationStarted('projects', { kind: 'mutation', evented: true, changes: new Set(['Project.name']) })();
      expect(cache.response('q1')).toBeUndefined();
    });

    it('keeps nothing when a fetch changed while the query executed, one was not cacheable, or none was made', async () => {
      await respond('raced', { a: 1 }, () => event('projects', 'PROJECT_CREATED'))();
      expect(cache.response('raced')).toBeUndefined();
      await respond('unrelated', { a: 1 }, () => event('projects', 'WORKSPACE_ACQUIRED'))();
      expect(cache.response('unrelated')).toEqual({ a: 1 });
      const context = {};
      cache.beginResponse(context);
      cache.noteFetch(context, 'projects', names(), cache.ticket('projects', NAMES, names()).stamp, 10);
      cache.noteUncacheable(context);
      cache.keepResponse(context, 'mixed', { a: 1 });
      expect(cache.response('mixed')).toBeUndefined();
      const none = {};
      cache.beginResponse(none);
      cache.keepResponse(none, 'none', { a: 1 });
      expect(cache.response('none')).toBeUndefined();
      // Never begun (another gateway's context, or the cache was off): nothing kept.
      cache.keepResponse({}, 'unbegun', { a: 1 });
      expect(cache.response('unbegun')).toBeUndefined();
    });

    it('learns which queries read nothing it keeps: only uncacheable fetches; not with a cacheable one, answered, filled or failed; none after a reload', () => {
      /** Executes the query `key` as `fetches` say (u: an uncacheable fetch, c: a cacheable one, f: a cacheable one that failed). */
      const execute = (key: string, fetches: string) => {
        const context = {};
        cache.beginResponse(context);
        for (const f of fetches) {
          if (f === 'u') cache.noteUncacheable(context);
          if (f === 'c') cache.noteFetch(context, 'projects', names(), cache.ticket('projects', NAMES, names()).stamp, 10);
          if (f === 'f') cache.noteFailedFetch(context);
        }
        cache.keepResponse(context, key, { a: 1 });
      };
      execute('git', 'uu');
      execute('mixed', 'uc');
      execute('failed', 'uf');
      execute('nothing', '');
      expect(['git', 'mixed', 'failed', 'nothing', 'unseen'].filter((k) => cache.readsNothingCached(k))).toEqual(['git']);
      expect(cache.response('git')).toBeUndefined();
      // Learnt anew from each execution.
      execute('git', 'uc');
      expect(cache.readsNothingCached('git')).toBe(false);
      execute('git', 'u');
      expect(cache.readsNothingCached('git')).toBe(true);
      cache.useSchemas(schemas);
      expect(cache.readsNothingCached('git')).toBe(false);
      // Bounded: past 10,000 queries the oldest is forgotten.
      for (let i = 0; i <= 10_000; i++) execute(`q${i}`, 'u');
      expect([cache.readsNothingCached('q0'), cache.readsNothingCached('q1'), cache.readsNothingCached('q10000')]).toEqual([false, true, true]);
    });

    it('forgets every response when a mutation not known to be evented answers, and serves none while it is out', async () => {
      await respond('q2', { b: 1 })();
      const done = cache.mutationStarted('projects', { kind: 'mutation', evented: false });
      expect(cache.response('q2')).toBeUndefined();
      done();
      expect(cache.responseCount).toBe(0);
    });
  });

  it('keeps at most maxBytes of answers over every subgraph, the filled subgraph\'s oldest going first, then the others\'', async () => {
    const small = new EntityCache({ databaseUrl: fixture.db.url, log: silentLogger(), applicationName: 'kl-entity-cache-bytes', maxBytes: 10 });
    try {
      small.useSchemas(schemas);
      await small.start();
      await untilTrue('listening', () => small.listening);
      const keep = (subgraph: string, query: string, key: string, json: string) => {
        const fields = (small.kindOf(subgraph, query) as { fields: ReadonlySet<string> }).fields;
        small.fill(small.ticket(subgraph, query, fields), key, json);
      };
      const held = () => ['a', 'b', 'c'].filter((k) => small.get('projects', k) !== undefined).concat(small.get('runs', 'r') !== undefined ? ['r'] : []);
      keep('projects', NAMES, 'a', '12345');
      keep('projects', NAMES, 'b', '12345');
      expect([held(), small.heldBytes]).toEqual([['a', 'b'], 10]);
      keep('projects', NAMES, 'c', '123');
      expect([held(), small.heldBytes]).toEqual([['b', 'c'], 8]);
      keep('runs', RUNS, 'r', '1234');
      expect([held(), small.heldBytes]).toEqual([['c', 'r'], 7]);
      // A refill counts once.
      keep('runs', RUNS, 'r', '12');
      expect([held(), small.heldBytes]).toEqual([['c', 'r'], 5]);
      await event('projects', 'PROJECT_CREATED', small);
      expect([held(), small.heldBytes]).toEqual([['r'], 2]);
      keep('projects', TRUST, 'a', '1');
      await event('projects', 'PROJECT_TRUSTED', small);
      expect([held(), small.heldBytes]).toEqual([['r'], 2]);
    } finally {
      await small.stop();
    }
  });

  it('keeps at most maxEntries per subgraph, dropping the oldest, and a dropped group leaves no trace', async () => {
    const small = new EntityCache({ databaseUrl: fixture.db.url, log: silentLogger(), applicationName: 'kl-entity-cache-small', maxEntries: 2, maxResponses: 2, maxResponseBytes: 100 });
    try {
      small.useSchemas(schemas);
      await small.start();
      await untilTrue('listening', () => small.listening);
      const fields = (small.kindOf('projects', NAMES) as { fields: ReadonlySet<string> }).fields;
      for (const key of ['a', 'b', 'c']) small.fill(small.ticket('projects', NAMES, fields), key, '{}');
      expect(['a', 'b', 'c'].map((k) => small.get('projects', k) !== undefined)).toEqual([false, true, true]);
      expect(small.size).toBe(2);
      small.fill(small.ticket('projects', NAMES, fields), 'b', '{"again":1}');
      small.fill(small.ticket('projects', NAMES, fields), 'd', '{}');
      // `b` was refreshed, so `c` is now the oldest.
      expect(['b', 'c', 'd'].map((k) => small.get('projects', k) !== undefined)).toEqual([true, false, true]);
      small.mutationStarted('projects', { kind: 'mutation', evented: true, changes: new Set(['Project.name']) })();
      expect(small.size).toBe(0);
      // Responses: at most maxResponses, and at most maxResponseBytes of their fetches' answers.
      const keep = (key: string, bytes: number) => {
        const context = {};
        small.beginResponse(context);
        small.noteFetch(context, 'projects', fields, small.ticket('projects', NAMES, fields).stamp, bytes);
        small.keepResponse(context, key, { key });
      };
      keep('r1', 10);
      keep('r2', 10);
      keep('r3', 10);
      expect(['r1', 'r2', 'r3'].map((k) => small.response(k) !== undefined)).toEqual([false, true, true]);
      keep('big', 90);
      expect(['r2', 'r3', 'big'].map((k) => small.response(k) !== undefined)).toEqual([false, true, true]);
      keep('bigger', 95);
      expect(['r3', 'big', 'bigger'].map((k) => small.response(k) !== undefined)).toEqual([false, false, true]);
    } finally {
      await small.stop();
    }
  });
});
