import 'reflect-metadata';
import { createLogger } from '@keelson/service';
import { loadGatewayConfig } from './config';
import { startGateway } from './startGateway';

loadGatewayConfig(process.env)
  .then(async ({ logLevel, ...config }) => {
    const log = createLogger('gateway', logLevel);
    const running = await startGateway({ ...config, log }).catch((err: unknown) => {
      log.fatal({ err }, 'gateway failed to start');
      process.exit(1);
    });
    const stop = () => void running.stop().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  })
  .catch((err: unknown) => {
    process.stderr.write(`gateway: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
