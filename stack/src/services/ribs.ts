import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadRibsServiceConfig, startRibsService } from './ribsService';

runService('ribs', loadRibsServiceConfig, startRibsService);
