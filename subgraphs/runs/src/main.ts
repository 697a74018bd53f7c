import 'reflect-metadata';
import { createLogger } from '@keelson/service';
import { loadRunsConfig } from './config';
import { start } from './index';

const config = loadRunsConfig();
const log = createLogger('runs', config.logLevel);
start({ ...config, log }).then(
  (running) => {
    const stop = () => void running.stop().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  },
  (err: unknown) => {
    log.fatal({ err }, 'runs subgraph failed to start');
    process.exit(1);
  },
);
