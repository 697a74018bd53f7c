import 'reflect-metadata';
import { runService } from '@keelson/service';
import { loadProjectsConfig } from './config';
import { start } from './index';

runService('projects', loadProjectsConfig, start);
