import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadRibsServiceConfig, startRibsService } from '@keelson/stack';

runService('ribs', loadRibsServiceConfig, startRibsService);
