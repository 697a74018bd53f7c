import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadProjectsConfig, startProjectsSubgraph } from '@keelson/subgraph-projects';

runService('projects', loadProjectsConfig, startProjectsSubgraph);
