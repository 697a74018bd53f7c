// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import { NODE_STEER_MAX_CHARS } from '@keelson/schema';
import type { DagLaunch } from './dagState';
import { nodeSteerNotesQuery, nodeSteerUpdate } from './messages';

/**
 * `steerRun` on a launch: the `steerNode` Update keeps a note for a running prompt node (refused
 * CONFLICT for a node that is not a running prompt node), and the node's activity reads the notes it
 * has not seen through `nodeSteerNotes` between its tool rounds. Notes live for the launch; a node
 * runs once per launch.
 */
export function handleSteer(run: DagLaunch): void {
  const notes = new Map<string, string[]>();
  setHandler(
    nodeSteerUpdate,
    ({ nodeId, note }) => {
      const list = notes.get(nodeId) ?? [];
      list.push(note);
      notes.set(nodeId, list);
      return { index: list.length - 1 };
    },
    {
      validator: ({ nodeId, note }) => {
        if (typeof note !== 'string' || !note.trim()) throw ApplicationFailure.create({ type: 'BAD_USER_INPUT', message: 'note: must not be empty', nonRetryable: true });
        if (note.length > NODE_STEER_MAX_CHARS) throw ApplicationFailure.create({ type: 'BAD_USER_INPUT', message: `note: must be at most ${NODE_STEER_MAX_CHARS} characters`, nonRetryable: true });
        const planned = run.plan.find((n) => n.id === nodeId);
        if (!planned) throw ApplicationFailure.create({ type: 'NOT_FOUND', message: `run ${run.runId} has no node "${nodeId}"`, nonRetryable: true });
        if (planned.type !== 'prompt') throw ApplicationFailure.create({ type: 'CONFLICT', message: `node "${nodeId}" is a ${planned.type} node: only a prompt node reads steer notes`, nonRetryable: true });
        const status = run.nodes.get(nodeId)?.status ?? 'PENDING';
        if (status !== 'RUNNING') throw ApplicationFailure.create({ type: 'CONFLICT', message: `node "${nodeId}" is ${status}, not running: a note is read only by a running turn`, nonRetryable: true });
      },
    },
  );
  setHandler(nodeSteerNotesQuery, (nodeId) => [...(notes.get(nodeId) ?? [])]);
}
