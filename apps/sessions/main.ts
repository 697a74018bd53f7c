import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadSessionsConfig, startSessionsSubgraph } from '@keelson/subgraph-sessions';

runService('sessions', loadSessionsConfig, (config) => startSessionsSubgraph({ ...config, projects: config.projectsUrl }));
