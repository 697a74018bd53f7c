import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { findOwnedProcesses } from '@keelson/platform';
import { freePort } from '@keelson/service';
import { findTemporalCli, startDevServer, type DevServer } from '@keelson/temporal';
import { gql, gqlData } from '../support/client';
import { startTestMesh, type TestMesh } from '../support/mesh';
import { getRun, projectWithWorkflow, respond, startWorkflow } from '../support/runs';
import { quietTemporalRuntime } from '../support/temporalServer';
import { gatedWorkflow } from '../support/workflowFixtures';
import { Ledger, reconciles } from './ledger';

quietTemporalRuntime();

const RUNS = 4;
const OPS = 2;
const STEERS_PER_OP = 8;
const RESTARTS = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface OpFrames {
  status: string;
  frames: { edges: { node: { type: string; note: string | null } }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
}

/**
 * The Temporal dev server (file-backed, as `npm start` runs it) SIGKILLed and restarted on the same
 * port and SQLite file several times while clients answer gates (the `respond` Update) and steer ops
 * (the `steerNote` Update, with keys), and the ops' work children signal their op workflows. Clients
 * retry what failed with the same pauseId or key, as the README tells them to.
 */
describe('the Temporal dev server killed and restarted under load', () => {
  let dir: string;
  let server: DevServer | undefined;
  let mesh: TestMesh;
  let cli: string;
  let port: number;
  let dbFilename: string;
  let db: Client;

  beforeAll(async () => {
    const found = await findTemporalCli();
    if (!found) throw new Error('the temporal CLI is missing; globalSetup says how to build it');
    cli = found;
    dir = await mkdtemp(join(tmpdir(), 'keelson-faults-temporal-'));
    port = await freePort();
    dbFilename = join(dir, 'temporal.db');
    server = await startDevServer({ cli, port, uiPort: 0, dbFilename });
    mesh = await startTestMesh({ KEELSON_RUN_HEARTBEAT_TIMEOUT_MS: '6000' }, { temporal: { address: server.address, uiUrl: server.uiUrl } });
    db = new Client({ connectionString: mesh.db.url });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
    await mesh?.teardown();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('every acknowledged answer and steer is applied exactly once, no workflow fails, each restart recovers', async () => {
    const ledger = new Ledger('Temporal dev server killed and restarted under load');
    const url = mesh.gatewayUrl;
    const project = await projectWithWorkflow(url, 'temporal-restarts', { 'restart-gated.yaml': gatedWorkflow });
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await startWorkflow(url, 'restart-gated', { projectId: project.id }));
    const ops = [];
    for (let i = 0; i < OPS; i++) ops.push(await mesh.runs.services.ops.start({ kind: 'countdown', input: { steps: 3000, intervalMs: 500 }, steerable: true }));

    let restarting = true;
    let failedCalls = 0;
    let duplicateAnswers = 0;
    /** Set by a restart, cleared (and timed) by the first Update acknowledged after it. */
    let open: { recovered(): number } | undefined;
    const acked = () => {
      open?.recovered();
      open = undefined;
    };

    // Answers every gate once it pauses, retrying a failed answer with the same pauseId.
    const answerer = (async () => {
      const answered = new Set<string>();
      while (answered.size < runs.length) {
        for (const run of runs) {
          if (answered.has(run.id)) continue;
          const now = await getRun(url, run.id).catch(() => undefined);
          const pause = now?.status === 'PAUSED' ? now.pendingApproval : null;
          if (!pause) continue;
          const res = await respond(url, run.id, 'gate', 'approve', pause.pauseId).catch(() => undefined);
          if (!res?.ok) {
            failedCalls += 1;
            continue;
          }
          if (res.duplicate) duplicateAnswers += 1;
          answered.add(run.id);
          ledger.ack(`answer:${run.id}`);
          acked();
        }
        await sleep(150);
      }
    })();

    // Steers each op with keyed notes, one after the other, retrying a failed one with its key.
    const steer = async (opId: string, note: string, key: string) => {
      for (;;) {
        const res = await gql(url, 'mutation ($id: ID!, $n: String!, $k: String) { steerOp(id: $id, note: $n, key: $k) { id } }', { id: opId, n: note, k: key }).catch(() => undefined);
        if (res && !res.errors) {
          ledger.ack(`steer:${opId}:${note}`);
          acked();
          return;
        }
        failedCalls += 1;
        await sleep(200);
      }
    };
    const steerers = ops.map(async (op) => {
      for (let i = 0; (restarting || i < STEERS_PER_OP) && i < 200; i++) {
        await steer(op.id, `note ${i}`, `restart-${op.id}-${i}`);
        await sleep(300);
      }
    });

    // The faults: SIGKILL of the dev server's group, down for a second, a plain start on the same port and file.
    const downFor: number[] = [];
    for (let r = 0; r < RESTARTS; r++) {
      await sleep(2_500 + r * 500);
      const [owned] = await findOwnedProcesses([['server', 'start-dev'], ['--db-filename', dbFilename]]);
      if (!owned) throw new Error('the dev server is not running');
      open = ledger.fault();
      const killedAt = Date.now();
      process.kill(-owned.pgid, 'SIGKILL');
      await sleep(1_000);
      server = await startDevServer({ cli, port, uiPort: 0, dbFilename });
      downFor.push(Date.now() - killedAt);
      expect(server.previous).toBeNull();
      // The next restart waits for this one's recovery: faults piled on an unrecovered server prove less.
      const deadline = Date.now() + 120_000;
      while (open && Date.now() < deadline) await sleep(100);
      if (open) throw new Error(`no Update was acknowledged within 120 s of restart ${r + 1}`);
    }
    restarting = false;
    await Promise.all(steerers);
    await answerer;
    for (const op of ops) await steer(op.id, 'finish', `restart-${op.id}-finish`);

    const deadline = Date.now() + 180_000;
    /** The op's status and every OP_STEERED note, paging through its frames (a countdown writes two a step). */
    const opState = async (id: string) => {
      const notes: string[] = [];
      let after: string | null = null;
      for (;;) {
        const { op }: { op: OpFrames } = await gqlData<{ op: OpFrames }>(
          url,
          'query ($id: ID!, $a: String) { op(id: $id) { status frames(first: 500, after: $a) { edges { node { type note } } pageInfo { hasNextPage endCursor } } } }',
          { id, a: after },
        );
        notes.push(...op.frames.edges.filter((e) => e.node.type === 'OP_STEERED').map((e) => e.node.note ?? ''));
        if (!op.frames.pageInfo.hasNextPage) return { status: op.status, notes };
        after = op.frames.pageInfo.endCursor;
      }
    };
    let finals = await Promise.all(runs.map((r) => getRun(url, r.id)));
    let opFinals = await Promise.all(ops.map((o) => opState(o.id)));
    while ([...finals, ...opFinals].some((x) => x.status === 'RUNNING' || x.status === 'PAUSED' || x.status === 'PENDING')) {
      if (Date.now() > deadline) throw new Error(`not finished: ${JSON.stringify([...finals.map((r) => [r.id, r.status]), ...opFinals.map((o) => o.status)])}`);
      await sleep(500);
      finals = await Promise.all(runs.map((r) => getRun(url, r.id)));
      opFinals = await Promise.all(ops.map((o) => opState(o.id)));
    }
    for (const run of finals.filter((r) => r.status !== 'SUCCEEDED')) {
      console.log(`[faults] run ${run.id} ${run.status}: ${run.error ?? ''}; ${JSON.stringify(run.nodes.map((n) => [n.id, n.status, n.attempt, n.error]))}`);
    }

    // Persisted: every decided pause of these runs, every OP_STEERED frame, every effect after a gate.
    const { rows: pauses } = await db.query<{ run_id: string }>('SELECT run_id FROM run_pauses WHERE run_id = ANY($1) AND decision IS NOT NULL', [runs.map((r) => r.id)]);
    const steered = ops.flatMap((op, i) => opFinals[i]!.notes.map((note) => `steer:${op.id}:${note}`));
    const effects = await Promise.all(runs.map(async (r) => (await readFile(join(r.artifactsDir, 'effects.log'), 'utf8').catch(() => '')).split('\n').filter(Boolean).map(() => `effect:${r.id}`)));
    const servers = await findOwnedProcesses([['server', 'start-dev'], ['--db-filename', dbFilename]]);
    const row = ledger.write([...pauses.map((p) => `answer:${p.run_id}`), ...steered, ...effects.flat()], {
      failedByFaults: finals.filter((r) => r.status !== 'SUCCEEDED').length + opFinals.filter((o) => o.status !== 'SUCCEEDED').length,
      // Exactly one dev server holds the file: the live one.
      orphans: servers.length - 1,
      note:
        `${RESTARTS} SIGKILL+restarts (down ${downFor.join('/')} ms); ${runs.length} gated runs, ${ops.length} steered ops: ` +
        `${pauses.length} answers, ${steered.length} steers, ${effects.flat().length} after-gate effects stored; ` +
        `${failedCalls} client calls failed and were retried (${duplicateAnswers} answers came back as duplicates); recovery = first Update acknowledged after a restart`,
    });
    expect(ledger.faults).toBe(RESTARTS);
    expect(row.acknowledged).toBeGreaterThanOrEqual(runs.length + ops.length * (STEERS_PER_OP + 1));
    expect(effects.map((e) => e.length)).toEqual(runs.map(() => 1));
    expect(reconciles(row)).toBe(true);
  });
});
