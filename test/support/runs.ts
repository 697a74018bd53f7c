import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gql, gqlData } from './client';

/** The fields run tests read. */
export const RUN_FIELDS = `id workflowName status error launch temporalWorkflowId temporalUiUrl artifactsDir cwd
  startedAt completedAt
  pendingApproval { nodeId prompt pauseId artifacts { path text truncated error } }
  nodes { id type status attempt output outputTruncated exitCode error startedAt completedAt }`;

export interface RunView {
  id: string;
  workflowName: string;
  status: string;
  error: string | null;
  launch: number;
  temporalWorkflowId: string;
  temporalUiUrl: string | null;
  artifactsDir: string;
  cwd: string;
  startedAt: string;
  completedAt: string | null;
  pendingApproval: {
    nodeId: string;
    prompt: string;
    pauseId: string;
    artifacts: { path: string; text: string | null; truncated: boolean | null; error: string | null }[];
  } | null;
  nodes: {
    id: string;
    type: string;
    status: string;
    attempt: number;
    output: string | null;
    outputTruncated: boolean;
    exitCode: number | null;
    error: string | null;
    startedAt: string | null;
    completedAt: string | null;
  }[];
}

export async function getRun(url: string, id: string): Promise<RunView> {
  const data = await gqlData<{ run: RunView }>(url, `query ($id: ID!) { run(id: $id) { ${RUN_FIELDS} } }`, { id });
  return data.run;
}

/** Polls the run until `done` holds (or throws after `timeoutMs` with the last state). */
export async function waitForRun(url: string, id: string, done: (run: RunView) => boolean, timeoutMs = 30_000): Promise<RunView> {
  const deadline = Date.now() + timeoutMs;
  let run = await getRun(url, id);
  while (!done(run)) {
    if (Date.now() > deadline) throw new Error(`run ${id} did not reach the expected state within ${timeoutMs} ms: ${JSON.stringify(run, null, 2)}`);
    await new Promise((r) => setTimeout(r, 100));
    run = await getRun(url, id);
  }
  return run;
}

export async function startWorkflow(url: string, name: string, vars: { projectId?: string; inputs?: Record<string, string> } = {}): Promise<RunView> {
  const data = await gqlData<{ startWorkflow: RunView }>(
    url,
    `mutation ($name: String!, $inputs: JSON, $projectId: ID) { startWorkflow(name: $name, inputs: $inputs, projectId: $projectId) { ${RUN_FIELDS} } }`,
    { name, ...vars },
  );
  return data.startWorkflow;
}

export interface RespondResult {
  ok: boolean;
  error: string | null;
  pauseId: string | null;
  decision: string | null;
  duplicate: boolean;
}

export async function respond(url: string, runId: string, nodeId: string, text: string, pauseId?: string): Promise<RespondResult> {
  const res = await gql<{ respondToRun: RespondResult }>(
    url,
    'mutation ($r: ID!, $n: String!, $t: String!, $p: String) { respondToRun(runId: $r, nodeId: $n, text: $t, pauseId: $p) { ok error pauseId decision duplicate } }',
    { r: runId, n: nodeId, t: text, p: pauseId },
  );
  if (res.errors?.length || !res.data) throw new Error(`respondToRun failed: ${JSON.stringify(res.errors)}`);
  return res.data.respondToRun;
}

/** A registered, trusted project with workflow files in its `.keelson/workflows`. */
export async function projectWithWorkflow(url: string, name: string, files: Record<string, string>): Promise<{ id: string; rootPath: string }> {
  const { createProject } = await gqlData<{ createProject: { id: string; rootPath: string } }>(
    url,
    'mutation ($n: String!) { createProject(input: { name: $n }) { id rootPath } }',
    { n: name },
  );
  const dir = join(createProject.rootPath, '.keelson', 'workflows');
  await mkdir(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text);
  // Trust covers the workflow files as they are: files written after the project was created need it
  // again, as an operator would give it.
  await gqlData(url, 'mutation ($p: ID!) { setProjectTrust(projectId: $p, trusted: true) { id } }', { p: createProject.id });
  return createProject;
}

/** True while a process with this pid exists and is not a zombie (dead, waiting to be reaped). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** `steerOp` through the gateway; a repeated `key` is one steer. */
export function steerOp(url: string, id: string, note: string, key?: string) {
  return gql<{ steerOp: { id: string; status: string } }>(url, 'mutation ($id: ID!, $n: String!, $k: String) { steerOp(id: $id, note: $n, key: $k) { id status } }', { id, n: note, k: key ?? null });
}
