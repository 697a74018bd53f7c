import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import { parse, type DocumentNode, type ValidationRule } from 'graphql';

/** Bounds on one GraphQL request, the same at the gateway and in every subgraph (README "Security"). */
export interface RequestLimits {
  /** Deepest field nesting. */
  maxDepth: number;
  maxAliases: number;
  /** Lexical tokens of a document, counted while parsing (the parser stops there). */
  maxTokens: number;
  /** graphql-armor's cost: 2 per object, 1 per scalar, × 1.5 per level of depth, × a list's literal `first`. */
  maxCost: number;
  maxDirectives: number;
  /** Bytes of a request body after decompression. */
  maxBodyBytes: number;
}

/** The limits from `KEELSON_MAX_*`. */
export function limitsFromEnv(env: {
  KEELSON_MAX_QUERY_DEPTH: number;
  KEELSON_MAX_ALIASES: number;
  KEELSON_MAX_TOKENS: number;
  KEELSON_MAX_COST: number;
  KEELSON_MAX_DIRECTIVES: number;
  KEELSON_MAX_BODY_BYTES: number;
}): RequestLimits {
  return {
    maxDepth: env.KEELSON_MAX_QUERY_DEPTH,
    maxAliases: env.KEELSON_MAX_ALIASES,
    maxTokens: env.KEELSON_MAX_TOKENS,
    maxCost: env.KEELSON_MAX_COST,
    maxDirectives: env.KEELSON_MAX_DIRECTIVES,
    maxBodyBytes: env.KEELSON_MAX_BODY_BYTES,
  };
}

/** The documented defaults (`.env.example`). */
export const defaultLimits: RequestLimits = {
  maxDepth: 12,
  maxAliases: 30,
  maxTokens: 5000,
  maxCost: 50_000,
  maxDirectives: 50,
  maxBodyBytes: 1024 * 1024,
};

export interface ArmorProtection {
  /** Validation rules (depth, aliases, cost, directives), for Apollo Server and for any `validate()` call. */
  validationRules: ValidationRule[];
  /** Apollo Server plugins (field-suggestion masking). */
  plugins: ApolloServerPlugin<BaseContext>[];
  /** Apollo Server's and `graphql.parse`'s parse options: the token limit, enforced by the parser itself. */
  parseOptions: { maxTokens: number };
}

/**
 * graphql-armor's protections for `limits`. The token limit is graphql-js's own parser option
 * (one parse, stopped at the limit) instead of armor's second parse. A refused document is a
 * validation error (`GRAPHQL_VALIDATION_FAILED`, 400) naming the limit; an over-long one a parse
 * error (`GRAPHQL_PARSE_FAILED`, 400).
 */
export function armor(limits: RequestLimits): ArmorProtection {
  const protection = new ApolloArmor({
    maxTokens: { enabled: false },
    maxDepth: { n: limits.maxDepth, flattenFragments: true },
    maxAliases: { n: limits.maxAliases },
    costLimit: { maxCost: limits.maxCost },
    maxDirectives: { n: limits.maxDirectives },
    blockFieldSuggestion: { enabled: true },
  }).protect();
  return {
    validationRules: protection.validationRules,
    plugins: protection.plugins as ApolloServerPlugin<BaseContext>[],
    parseOptions: { maxTokens: limits.maxTokens },
  };
}

/** Parses a document under the token limit (graphql-ws servers, which parse themselves). */
export function parseLimited(query: string, limits: Pick<RequestLimits, 'maxTokens'>): DocumentNode {
  return parse(query, { maxTokens: limits.maxTokens });
}
