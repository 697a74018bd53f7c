import { GraphQLDateTime, GraphQLJSON } from 'graphql-scalars';

/** `DateTime` (ISO-8601 string) and `JSON`, the two custom scalars every subgraph shares by name. */
export const DateTimeScalar = GraphQLDateTime;
export const JSONScalar = GraphQLJSON;

/** type-graphql's scalar map: every `Date` field is a `DateTime`. */
export const scalarsMap = [{ type: Date, scalar: DateTimeScalar }];
