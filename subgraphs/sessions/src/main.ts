import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadSessionsConfig } from './config';
import { start } from './index';

runService('sessions', loadSessionsConfig, (config) => start({ ...config, projects: config.projectsUrl }));
