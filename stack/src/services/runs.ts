import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadRunsServiceConfig, startRunsService } from './runsService';

runService('runs', loadRunsServiceConfig, startRunsService);
