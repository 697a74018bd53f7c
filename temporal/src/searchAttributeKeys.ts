import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import { searchAttributes } from '@keelson/schema';

/**
 * Typed keys for the mesh's custom search attributes (all Keyword, as the dev server registers them),
 * for `typedSearchAttributes` on start and `upsertSearchAttributes` in workflows.
 */
export const searchAttributeKeys = {
  rib: defineSearchAttributeKey(searchAttributes.rib, SearchAttributeType.KEYWORD),
  workflowName: defineSearchAttributeKey(searchAttributes.workflowName, SearchAttributeType.KEYWORD),
  project: defineSearchAttributeKey(searchAttributes.project, SearchAttributeType.KEYWORD),
  kind: defineSearchAttributeKey(searchAttributes.kind, SearchAttributeType.KEYWORD),
  harness: defineSearchAttributeKey(searchAttributes.harness, SearchAttributeType.KEYWORD),
} as const;

/**
 * What a started workflow is found by: `KeelsonKind`, `KeelsonWorkflowName`, and `KeelsonProject` /
 * `KeelsonRib` when it has them.
 */
export function keelsonSearchAttributes(a: { kind: string; workflowName: string; project?: string | null; rib?: string | null }): SearchAttributePair[] {
  return [
    { key: searchAttributeKeys.kind, value: a.kind },
    { key: searchAttributeKeys.workflowName, value: a.workflowName },
    ...(a.project ? [{ key: searchAttributeKeys.project, value: a.project }] : []),
    ...(a.rib ? [{ key: searchAttributeKeys.rib, value: a.rib }] : []),
  ];
}
