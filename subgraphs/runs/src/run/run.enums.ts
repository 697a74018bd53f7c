import { opFrameTypes, runEventTypes, runNodeStatuses, runStatuses, type OpFrameType, type RunEventType, type RunNodeStatus, type RunStatus } from '@keelson/schema';
import { registerEnumType } from 'type-graphql';
import { workflowScopes, type WorkflowScope } from '@keelson/runs';

const asEnum = <T extends string>(values: readonly T[]) => Object.fromEntries(values.map((v) => [v, v])) as { [K in T]: K };

export const RunStatusEnum = asEnum<RunStatus>(runStatuses);
registerEnumType(RunStatusEnum, { name: 'RunStatus', description: 'The status of a run or an op.' });

export const RunNodeStatusEnum = asEnum<RunNodeStatus>(runNodeStatuses);
registerEnumType(RunNodeStatusEnum, { name: 'RunNodeStatus', description: 'The status of one node of a run; WAITING is an approval node whose gate is open.' });

export const RunEventTypeEnum = asEnum<RunEventType>(runEventTypes);
registerEnumType(RunEventTypeEnum, { name: 'RunEventType', description: 'What a run event reports (one transition).' });

export const OpFrameTypeEnum = asEnum<OpFrameType>(opFrameTypes);
registerEnumType(OpFrameTypeEnum, { name: 'OpFrameType', description: 'What an op frame reports.' });

export const WorkflowScopeEnum = asEnum<WorkflowScope>(workflowScopes);
registerEnumType(WorkflowScopeEnum, {
  name: 'WorkflowScope',
  description: 'Where a workflow definition comes from, lowest precedence first: RIB < BUNDLED < GLOBAL < PROJECT.',
});
