import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadSwarmsConfig, start } from '@keelson/subgraph-swarms';

runService('swarms', loadSwarmsConfig, (config) => start(config));
