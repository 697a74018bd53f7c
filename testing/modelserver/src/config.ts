import { parseArgs } from 'node:util';
import { z } from 'zod';
import { describeZodError as describeIssues } from '@keelson/schema';

export interface ModelServerConfig {
  host: string;
  port: number;
  scriptPath?: string;
  embeddingDimensions: number;
  logLevel: string;
}

const schema = z.object({
  host: z.string().min(1),
  port: z.coerce.number().int().min(0).max(65535),
  scriptPath: z.string().min(1).optional(),
  embeddingDimensions: z.coerce.number().int().min(1).max(8192),
  logLevel: z.enum(['debug', 'info', 'warn', 'error']),
});

/**
 * The one place the model server reads its environment and flags. Flags win over variables:
 * `--host` (`KEELSON_HOST`, default 127.0.0.1), `--port` (`KEELSON_MODEL_SERVER_PORT`, default 0 =
 * a free port), `--script` (`KEELSON_MODEL_SCRIPT`), `--dimensions` (default 256).
 * @throws naming the bad flag or variable
 */
export function loadModelServerConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): ModelServerConfig {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      script: { type: 'string' },
      dimensions: { type: 'string' },
    },
    strict: true,
  });
  const blank = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());
  const result = schema.safeParse({
    host: blank(values.host) ?? blank(env.KEELSON_HOST) ?? '127.0.0.1',
    port: blank(values.port) ?? blank(env.KEELSON_MODEL_SERVER_PORT) ?? 0,
    scriptPath: blank(values.script) ?? blank(env.KEELSON_MODEL_SCRIPT),
    embeddingDimensions: blank(values.dimensions) ?? 256,
    logLevel: blank(env.KEELSON_LOG_LEVEL) ?? 'info',
  });
  if (!result.success) throw new Error(`model server: invalid configuration: ${describeIssues(result.error, 'config')}`);
  return result.data;
}
