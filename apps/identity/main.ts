import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadIdentityConfig, start } from '@keelson/subgraph-identity';

runService('identity', loadIdentityConfig, start);
