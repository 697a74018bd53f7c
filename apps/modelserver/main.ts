import { createLogger, loadDotEnv } from '@keelson/service';
import { loadModelServerConfig, startModelServer } from '@keelson/model-server';

loadDotEnv();
const config = loadModelServerConfig(process.argv.slice(2));
const log = createLogger('model-server', config.logLevel);
startModelServer({ ...config, log }).then(
  (server) => {
    process.stdout.write(
      [
        `[keelson] model server:           ${server.url}`,
        `[keelson] Anthropic Messages:     ANTHROPIC_BASE_URL=${server.anthropicBaseUrl}`,
        `[keelson] OpenAI (chat, responses, embeddings): OPENAI_BASE_URL=${server.openaiBaseUrl}`,
        `[keelson] recorded requests:      ${server.url}/_keelson/requests`,
        config.scriptPath ? `[keelson] script:                 ${config.scriptPath}` : '[keelson] script:                 built-in markers only',
        '',
      ].join('\n'),
    );
    const stop = () => void server.stop().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  },
  (err: unknown) => {
    log.fatal({ err }, 'model server failed to start');
    process.exit(1);
  },
);
