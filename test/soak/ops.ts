import { randomUUID } from 'node:crypto';
import { gqlData } from '../support/client';
import { RUN_FIELDS, respond, waitForRun, type RunView } from '../support/runs';

/**
 * The soak's operations, each as a client sends it through the gateway; each throws when the mesh
 * answers wrong (an error, or a repeat with the same idempotency key that is not the same result).
 */
export interface Ops {
  /** A federated read: a project (projects subgraph) with its runs (runs subgraph) and lock. */
  query(): Promise<void>;
  /** `createProject` sent twice with one idempotency key, then its mutation lock taken and released. */
  keyedProject(): Promise<void>;
  /** A `project-check` run started twice with one key, paused at its gate, approved, finished. */
  projectCheck(): Promise<void>;
  /** A pi turn against the local model server, sent twice with one key, waited for. */
  piTurn(): Promise<void>;
}

const FEDERATED = 'query SoakRead($p: ID!) { project(id: $p) { id name mutationLock { holder } runs(first: 5) { edges { node { id status } } } } }';

export async function createOps(url: string): Promise<Ops> {
  const { createProject: home } = await gqlData<{ createProject: { id: string } }>(url, 'mutation { createProject(input: { name: "soak-home" }) { id } }');
  const { startSession } = await gqlData<{ startSession: { id: string } }>(url, 'mutation ($p: ID!) { startSession(harnessId: "pi", input: { projectId: $p }) { id } }', { p: home.id });
  let projects = 0;
  let turns = 0;
  return {
    async query() {
      const { project } = await gqlData<{ project: { id: string } | null }>(url, FEDERATED, { p: home.id });
      if (project?.id !== home.id) throw new Error(`the federated read answered ${JSON.stringify(project)} for project ${home.id}`);
    },
    async keyedProject() {
      const key = randomUUID();
      const name = `soak-${++projects}`;
      const create = () =>
        gqlData<{ createProject: { id: string; name: string } }>(url, 'mutation SoakCreate($n: String!, $k: String) { createProject(input: { name: $n }, idempotencyKey: $k) { id name } }', { n: name, k: key });
      const first = (await create()).createProject;
      const repeat = (await create()).createProject;
      if (repeat.id !== first.id) throw new Error(`createProject with key ${key} answered project ${first.id}, then ${repeat.id}`);
      const { acquireMutationLock } = await gqlData<{ acquireMutationLock: { id: string } }>(
        url,
        'mutation SoakLock($p: ID!) { acquireMutationLock(projectId: $p, holder: "soak", purpose: "soak") { id } }',
        { p: first.id },
      );
      const { releaseMutationLock } = await gqlData<{ releaseMutationLock: boolean }>(url, 'mutation SoakUnlock($id: ID!) { releaseMutationLock(id: $id) }', { id: acquireMutationLock.id });
      if (!releaseMutationLock) throw new Error(`releaseMutationLock(${acquireMutationLock.id}) answered false`);
    },
    async projectCheck() {
      const key = randomUUID();
      const start = () =>
        gqlData<{ startWorkflow: RunView }>(url, `mutation SoakRun($p: ID, $k: String) { startWorkflow(name: "project-check", projectId: $p, idempotencyKey: $k) { ${RUN_FIELDS} } }`, {
          p: home.id,
          k: key,
        });
      const run = (await start()).startWorkflow;
      const repeat = (await start()).startWorkflow;
      if (repeat.id !== run.id) throw new Error(`startWorkflow with key ${key} answered run ${run.id}, then ${repeat.id}`);
      const paused = await waitForRun(url, run.id, (r) => r.status === 'PAUSED' || r.status === 'FAILED', 60_000);
      if (paused.status !== 'PAUSED') throw new Error(`run ${run.id} ended ${paused.status} before its gate: ${paused.error}`);
      const answer = await respond(url, run.id, paused.pendingApproval!.nodeId, 'approve', paused.pendingApproval!.pauseId);
      if (!answer.ok) throw new Error(`respondToRun(${run.id}) answered ${JSON.stringify(answer)}`);
      const done = await waitForRun(url, run.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED', 60_000);
      if (done.status !== 'SUCCEEDED') throw new Error(`run ${run.id} ended ${done.status}: ${done.error}`);
    },
    async piTurn() {
      const key = randomUUID();
      const text = `soak turn ${++turns}`;
      const send = () =>
        gqlData<{ sendUserTurn: { turnId: string } }>(url, 'mutation SoakTurn($s: ID!, $t: String!, $k: String) { sendUserTurn(sessionId: $s, text: $t, idempotencyKey: $k) { turnId } }', {
          s: startSession.id,
          t: text,
          k: key,
        });
      const first = (await send()).sendUserTurn;
      const repeat = (await send()).sendUserTurn;
      if (repeat.turnId !== first.turnId) throw new Error(`sendUserTurn with key ${key} answered turn ${first.turnId}, then ${repeat.turnId}`);
      const deadline = Date.now() + 60_000;
      for (;;) {
        const { session } = await gqlData<{ session: { turnInFlight: boolean; currentTurnId: string | null } }>(url, 'query SoakSession($s: ID!) { session(id: $s) { turnInFlight currentTurnId } }', {
          s: startSession.id,
        });
        if (!session.turnInFlight) break;
        if (Date.now() > deadline) throw new Error(`pi turn ${first.turnId} still in flight after 60 s`);
        await new Promise((r) => setTimeout(r, 500));
      }
    },
  };
}
