import 'reflect-metadata';
import { createLogger } from '@keelson/service';
import { loadProjectsConfig } from './config';
import { start } from './index';

const config = loadProjectsConfig();
const log = createLogger('projects', config.logLevel);
start({ ...config, log }).then(
  (running) => {
    const stop = () => void running.stop().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  },
  (err: unknown) => {
    log.fatal({ err }, 'projects subgraph failed to start');
    process.exit(1);
  },
);
