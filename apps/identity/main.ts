import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadIdentityConfig, startIdentitySubgraph } from '@keelson/subgraph-identity';

runService('identity', loadIdentityConfig, startIdentitySubgraph);
