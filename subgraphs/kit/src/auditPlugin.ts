import type { ApolloServerPlugin } from '@apollo/server';
import type { AuditSink } from '@keelson/platform';
import { Kind, valueFromASTUntyped, type FieldNode, type GraphQLFormattedError } from 'graphql';
import type { SubgraphContext } from './startSubgraph';

/** A root field's arguments as the request gave them, variables substituted. */
function argumentsOf(field: FieldNode, variables: Record<string, unknown> | undefined): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const arg of field.arguments ?? []) args[arg.name.value] = valueFromASTUntyped(arg.value, variables);
  return args;
}

/** `OK`, or the code of the first error on this root field (or of the whole request when none names one). */
function outcomeOf(responseKey: string, errors: readonly GraphQLFormattedError[] | undefined): string {
  if (!errors?.length) return 'OK';
  const mine = errors.find((e) => e.path?.[0] === responseKey) ?? errors.find((e) => !e.path?.length);
  if (!mine) return 'OK';
  const code = mine.extensions?.code;
  return typeof code === 'string' ? code : 'INTERNAL_SERVER_ERROR';
}

/**
 * One audit entry per root field of every mutation this subgraph answers — refused ones included
 * (scope, validation of arguments, conflicts) — with the asserted caller, a digest of the field's
 * arguments and the outcome. Recorded after the answer is formed and never awaited: the audit
 * write cannot delay or fail the mutation (see `AuditLog`).
 */
export function auditPlugin<TContext extends SubgraphContext>(audit: AuditSink): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ operation, request, response, contextValue }) {
          if (operation?.operation !== 'mutation') return;
          const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
          for (const selection of operation.selectionSet.selections) {
            if (selection.kind !== Kind.FIELD || selection.name.value.startsWith('__')) continue;
            const responseKey = selection.alias?.value ?? selection.name.value;
            audit.record({
              kind: 'MUTATION',
              operation: selection.name.value,
              args: argumentsOf(selection, request.variables),
              outcome: outcomeOf(responseKey, errors),
              caller: contextValue.caller,
            });
          }
        },
      };
    },
  };
}
