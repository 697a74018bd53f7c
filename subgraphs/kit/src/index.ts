export { buildFederatedSchema, FEDERATION_LINK } from './federation';
export type { FederatedSchema, FederatedSchemaOptions, ReferenceResolvers } from './federation';
export { DateTimeScalar, JSONScalar, scalarsMap } from './scalars';
export { meshGraphQLError, createErrorFormatter } from './errors';
// Input parsing and paging live in @keelson/schema (the runs domain uses them below the kit); subgraphs keep importing them from here.
export { parseInput, pageArgsSchema, pageOf } from '@keelson/schema';
export { RequestLoaders, byKeys, groupByKeys } from './loaders';
export { startSubgraph, serveDomain } from './startSubgraph';
export { compiledExecution } from './compiledExecutor';
export type { CompiledExecution, SubgraphExecution } from './compiledExecutor';
export type { SubgraphContext, StartSubgraphOptions, SubgraphServing, SubgraphStartOptions, SubgraphRouteHandler } from './startSubgraph';
export { RequiresScope, Authenticated } from './access';
export { PageInfo } from './connection';
export { SteerResult, SteerStatusEnum, steerResult } from './steerResult';
export { payloadOrNull } from './payloadFields';
export type { PageArgs } from '@keelson/schema';
export { subgraphServiceConfig } from './serviceConfig';
export type { SubgraphServiceConfig } from './serviceConfig';
