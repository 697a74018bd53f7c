import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadMemoryConfig } from './config';
import { start } from './index';

runService('memory', loadMemoryConfig, start);
