// npm run credential -- set <ribId> <serviceId>   (secret on stdin) | delete <ribId> <serviceId> | list [ribId]
import 'reflect-metadata';
import { loadRibsConfig } from '../config';
import { runCredentialCli } from './credentialCli';

/** Reads the secret: without echo from a terminal (one line), else all of stdin. */
function readSecret(): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      stdin.on('data', (c: Buffer) => chunks.push(c));
      stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '')));
      stdin.on('error', reject);
    });
  }
  process.stderr.write('secret (not echoed): ');
  return new Promise((resolve) => {
    let secret = '';
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    const onData = (text: string) => {
      for (const ch of text) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          stdin.setRawMode(false);
          stdin.pause();
          stdin.off('data', onData);
          process.stderr.write('\n');
          return resolve(secret);
        }
        if (ch === '\u0003') process.exit(130);
        secret = ch === '\u007f' ? secret.slice(0, -1) : secret + ch;
      }
    };
    stdin.on('data', onData);
  });
}

runCredentialCli(process.argv.slice(2), loadRibsConfig(), { readSecret, out: (line) => process.stdout.write(`${line}\n`) }).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`credential: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
