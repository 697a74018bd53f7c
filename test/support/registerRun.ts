import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { NewRun, RunStore } from '@keelson/runs';
import { parseWorkflowDefinition, type WorkflowDefinition } from '@keelson/schema';

/** A workflow definition a test wrote, validated (a definition the schema rejects fails the test). */
export function definitionOf(raw: unknown): WorkflowDefinition {
  const parsed = parseWorkflowDefinition(raw);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.definition;
}

/**
 * Registers a run of `definition` straight through the store, as `startWorkflow` would: a BUNDLED run
 * of no project and no rib, artifacts under `<cwd>/<id>`, unless `over` says otherwise.
 */
export async function registerRun(store: RunStore, definition: WorkflowDefinition, over: Partial<NewRun> & Pick<NewRun, 'cwd'>): Promise<NewRun> {
  const id = over.id ?? randomUUID();
  const run: NewRun = {
    id,
    workflowName: definition.name,
    title: definition.name,
    definition,
    scope: 'BUNDLED',
    inputs: {},
    projectId: null,
    projectName: null,
    ribId: null,
    startedByRibId: null,
    artifactsDir: join(over.cwd, id),
    temporalWorkflowId: `run-${definition.name}-${id.slice(0, 8)}`,
    ...over,
  };
  await store.createRun(run);
  return run;
}
