import { createLogger, loadDotEnv } from '@keelson/service';
import { loadModelServerConfig, startModelServer } from './src/index';

loadDotEnv();
const config = loadModelServerConfig(process.argv.slice(2));
const log = createLogger('model-server', config.logLevel);
startModelServer({ ...config, log }).then(
  (server) => {
    for (const line of [
      `model server:           ${server.url}`,
      `Anthropic Messages:     ANTHROPIC_BASE_URL=${server.anthropicBaseUrl}`,
      `OpenAI (chat, responses, embeddings): OPENAI_BASE_URL=${server.openaiBaseUrl}`,
      `recorded requests:      ${server.url}/_keelson/requests`,
      `script:                 ${config.scriptPath ?? 'built-in markers only'}`,
    ])
      log.info(line);
    const stop = () => void server.stop().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  },
  (err: unknown) => {
    log.fatal({ err }, 'model server failed to start');
    process.exit(1);
  },
);
