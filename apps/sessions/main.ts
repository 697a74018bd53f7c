import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadSessionsConfig, start } from '@keelson/subgraph-sessions';

runService('sessions', loadSessionsConfig, (config) => start({ ...config, projects: config.projectsUrl }));
