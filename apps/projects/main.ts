import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadProjectsConfig, start } from '@keelson/subgraph-projects';

runService('projects', loadProjectsConfig, start);
