import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadRibsConfig } from './config';
import { start } from './index';

runService('ribs', loadRibsConfig, start);
