/**
 * `@keelson/shared`: the Rib contract under the name seed 000 uses (`import type { Rib } from
 * "@keelson/shared"`). One source of truth: this package re-exports `@keelson/ribs-contract` whole —
 * the Rib interface and its hooks, tools, views, surfaces, workflows, ops, `RibContext`, project
 * bodies and errors, and the wire shapes (`ListRibsResponse`, `RibActionResponse`,
 * `ListAgentsResponse`, …).
 */
export * from '@keelson/ribs-contract';
