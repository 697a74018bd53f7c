import { metricsRegistry, type CompiledAnswerEngine } from '@keelson/service';

/** Operations a compiled executor answered, by engine, or `none` when it answered nothing. */
export type AnsweredBy = CompiledAnswerEngine | 'none';

async function answerCounts(service: string): Promise<Record<CompiledAnswerEngine, number>> {
  const metric = metricsRegistry().getSingleMetric('keelson_compiled_executor_answers_total');
  const values = metric ? (await metric.get()).values : [];
  const count = (by: CompiledAnswerEngine) => values.filter((v) => v.labels.service === service && v.labels.by === by).reduce((n, v) => n + v.value, 0);
  return { 'graphql-jit': count('graphql-jit'), 'graphql-js': count('graphql-js') };
}

/**
 * Runs `send` and says which engine of the compiled executor of `service` (this process's
 * `keelson_compiled_executor_answers_total`) answered it: exactly one, or none; anything else throws.
 */
export async function answeredBy<T>(service: string, send: () => Promise<T>): Promise<{ answer: T; by: AnsweredBy }> {
  const before = await answerCounts(service);
  const answer = await send();
  const after = await answerCounts(service);
  const jit = after['graphql-jit'] - before['graphql-jit'];
  const js = after['graphql-js'] - before['graphql-js'];
  if (jit + js > 1) throw new Error(`one request was counted ${jit + js} times (graphql-jit ${jit}, graphql-js ${js})`);
  return { answer, by: jit ? 'graphql-jit' : js ? 'graphql-js' : 'none' };
}
