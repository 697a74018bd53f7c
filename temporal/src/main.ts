import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadStandaloneWorkerConfig, startStandaloneWorker } from './standaloneWorker';

/**
 * The bare worker, without the runs domain: a policy `ask` about a prompt node's tool is denied here
 * (a warning says so at boot). Production and the crash tests run `stack/src/services/worker.ts`,
 * which gives the worker the operator's approval gates.
 */
runService('worker', loadStandaloneWorkerConfig, startStandaloneWorker);
