import type { ApolloServerPlugin } from '@apollo/server';
import type { AuditRecorder } from '@keelson/platform';
import { actorOf } from '@keelson/schema';
import type { CallerContext, Logger } from '@keelson/service';
import { Kind } from 'graphql';

/**
 * One audit entry per mutation the gateway answers (seed 002): who (the authenticated caller), what
 * (`mutation <root fields>`, the client's operation name as detail), a digest of the document and
 * variables, and the outcome (`ok` or the first error's code — a refusal before execution too). It
 * is written before the answer goes out; a failure to write is logged loudly, and the answer (the
 * mutation has happened) still goes.
 */
export function auditPlugin(record: AuditRecorder, log: Logger): ApolloServerPlugin<CallerContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse(rc) {
          const operation = rc.operation;
          if (operation?.operation !== 'mutation') return;
          const fields = operation.selectionSet.selections.flatMap((s) => (s.kind === Kind.FIELD ? [s.name.value] : []));
          const body = rc.response.body;
          const errors = body.kind === 'single' ? body.singleResult.errors : rc.errors;
          const code = errors?.[0]?.extensions?.code;
          try {
            await record({
              type: 'MUTATION',
              operation: `mutation ${fields.join(',')}`,
              args: { document: rc.source ?? null, variables: rc.request.variables ?? {} },
              outcome: errors?.length ? (typeof code === 'string' ? code : 'ERROR') : 'ok',
              ...(rc.operationName ? { detail: rc.operationName } : {}),
              actor: rc.contextValue.caller ? actorOf(rc.contextValue.caller) : null,
            });
          } catch (err) {
            log.error({ err, operation: fields.join(',') }, 'could not write the audit entry of a mutation');
          }
        },
      };
    },
  };
}
