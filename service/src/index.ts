export { createLogger, silentLogger } from './logger';
export type { Logger } from './logger';
export { assertBindAllowed } from './bindGuard';
export { serveGraphQL, healthRoute } from './serveGraphQL';
export { runService } from './runService';
export { clientSocket } from './clientSocket';
export type { ClientSocketConstructor, ClientSocketOptions } from './clientSocket';
export type { ServeOptions, Served, RouteHandler } from './serveGraphQL';
