import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadIdentityConfig } from './config';
import { start } from './index';

runService('identity', loadIdentityConfig, start);
