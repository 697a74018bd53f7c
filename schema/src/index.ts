export { errorCodes, errorCodeSchema, statusOf, codeForStatus, MeshError, isMeshError } from './errors';
export type { ErrorCode } from './errors';
export { envSchema, parseEnv, ConfigError, expandHome, isLoopback } from './config';
export type { MeshEnv } from './config';
export { describeZodError } from './zodMessage';
export {
  streams,
  EVENTS_CHANNEL,
  cursorSchema,
  encodeCursor,
  decodeCursor,
  projectEventTypes,
  harnessCaptureEventTypes,
  sessionCreatedPayloadSchema,
  transcriptAppendedPayloadSchema,
  sessionUpdatedPayloadSchema,
  harnessOfSessionId,
} from './events';
export type {
  StreamName,
  EventEnvelope,
  ProjectEventType,
  HarnessCaptureEventType,
  SessionCreatedPayload,
  TranscriptAppendedPayload,
  SessionUpdatedPayload,
} from './events';
export { TASK_QUEUE, workflowTypes, searchAttributes } from './temporal';
export type { SearchAttributeName } from './temporal';
export { isUuid } from './ids';
