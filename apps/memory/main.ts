import 'reflect-metadata';
import { runService } from '@keelson/service';
import { startMemoryService } from '@keelson/stack';
import { loadMemoryConfig } from '@keelson/subgraph-memory';

runService('memory', loadMemoryConfig, startMemoryService);
