import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadRunsServiceConfig, startRunsService } from '@keelson/stack';

runService('runs', loadRunsServiceConfig, startRunsService);
