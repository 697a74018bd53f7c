export { createKeelsonClient, cursorOf, KeelsonError } from './client';
export type {
  CursorEvent,
  KeelsonClient,
  KeelsonClientOptions,
  KeelsonResult,
  ResumableHandlers,
  ResumableSubscription,
  TokenSource,
} from './client';
export * from './gql/graphql';
export type { TypedDocumentNode } from '@graphql-typed-document-node/core';
