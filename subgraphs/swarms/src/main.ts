import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadSwarmsConfig } from './config';
import { start } from './index';

runService('swarms', loadSwarmsConfig, (config) => start(config));
