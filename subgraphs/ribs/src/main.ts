import 'reflect-metadata';
import { createLogger } from '@keelson/service';
import { loadRibsConfig } from './config';
import { start } from './index';

const config = loadRibsConfig();
const log = createLogger('ribs', config.logLevel);
start({ ...config, log }).then(
  (running) => {
    const stop = () => void running.stop().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  },
  (err: unknown) => {
    log.fatal({ err }, (err as Error).message ?? 'ribs subgraph failed to start');
    process.exit(1);
  },
);
