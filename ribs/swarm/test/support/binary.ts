import { createServer } from 'node:net';
import { join } from 'node:path';

/** The stand-in executable (`clickclack serve …` speaking the recorded wire protocol). */
export const STANDIN_BIN = join(__dirname, '..', '..', 'bin', 'clickclack');

/** The real ClickClack when CLICKCLACK_BIN names it, else the stand-in. */
export function clickclackBinary(): string {
  return process.env.CLICKCLACK_BIN?.trim() || STANDIN_BIN;
}

/** A port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
