import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadRunsConfig } from './config';
import { start } from './index';

runService('runs', loadRunsConfig, start);
