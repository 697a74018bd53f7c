import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadWorkerServiceConfig, startWorkerService } from './workerService';

runService('worker', loadWorkerServiceConfig, startWorkerService);
