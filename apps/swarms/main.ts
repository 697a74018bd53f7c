import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadSwarmsConfig, startSwarmsSubgraph } from '@keelson/subgraph-swarms';

runService('swarms', loadSwarmsConfig, (config) => startSwarmsSubgraph(config));
