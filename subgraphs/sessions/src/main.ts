import 'reflect-metadata';
import { createLogger } from '@keelson/service';
import { loadSessionsConfig } from './config';
import { start } from './index';

const config = loadSessionsConfig();
const log = createLogger('sessions', config.logLevel);
start({ ...config, projects: config.projectsUrl, log }).then(
  (running) => {
    const stop = () => void running.stop().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  },
  (err: unknown) => {
    log.fatal({ err }, 'sessions subgraph failed to start');
    process.exit(1);
  },
);
