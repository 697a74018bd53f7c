import 'reflect-metadata';
import { createLogger } from '@keelson/service';
import { loadMemoryConfig } from './config';
import { start } from './index';

const config = loadMemoryConfig();
const log = createLogger('memory', config.logLevel);
start({ ...config, log }).then(
  (running) => {
    const stop = () => void running.stop().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  },
  (err: unknown) => {
    log.fatal({ err }, 'memory subgraph failed to start');
    process.exit(1);
  },
);
