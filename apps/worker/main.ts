import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadWorkerServiceConfig, startWorkerService } from '@keelson/stack';

runService('worker', loadWorkerServiceConfig, startWorkerService);
