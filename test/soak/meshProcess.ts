import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startModelServer, type ModelServer } from '@keelson/model-server';
import { findOwnedProcesses, isAlive, listProcesses } from '@keelson/platform';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { leftovers, startInstallation, startMeshProcess, startScriptNodeFlags, type StartInstallation, type StartProcess } from '../support/startProcess';

/** The processes the soak watches, by name (`mesh`, `gateway`, `temporal`). */
export type Watched = { name: string; pid: number }[];

/** `npm start` on a temp home, a throwaway database and free ports, with the local model server as its provider. */
export interface SoakMesh {
  install: StartInstallation;
  db: TestDatabase;
  model: ModelServer;
  mesh: StartProcess;
  token: string;
  /** The gateway (its own process) and the mesh process's `/metrics` URLs. */
  metricsUrls: Record<string, string>;
  /** The mesh, its gateway child and the Temporal dev server. */
  processes(): Promise<Watched>;
  /** Ctrl-C to the group, then the dev server if it outlived it, the model server, the database and the folder. */
  stop(): Promise<string[]>;
}

export async function startSoakMesh(): Promise<SoakMesh> {
  const db = await createTestDatabase('keelson_soak');
  const dir = await mkdtemp(join(tmpdir(), 'keelson-soak-'));
  const model = await startModelServer({ rules: [] });
  let mesh: StartProcess | undefined;
  let install: StartInstallation | undefined;
  const cleanup = async (): Promise<string[]> => {
    const left: string[] = [];
    await mesh?.interrupt();
    if (install) {
      // The dev server stops last, after the group; whatever is still alive then is ended and reported.
      const deadline = Date.now() + 15_000;
      while ((await leftovers(install)).length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      left.push(...(await leftovers(install)));
      for (const p of await findOwnedProcesses([['--db-filename', install.devDb]])) if (isAlive(p.pid)) process.kill(-p.pgid, 'SIGKILL');
    }
    await model.stop();
    await db.drop();
    await rm(dir, { recursive: true, force: true });
    return left;
  };
  try {
    await writeFile(join(dir, 'gitconfig'), '[user]\n\tname = Keelson Soak\n\temail = soak@keelson.invalid\n[init]\n\tdefaultBranch = main\n');
    install = await startInstallation(dir, db.url, { KEELSON_MODEL_BASE_URL: model.url, KEELSON_MODEL_API_KEY: 'keelson-soak' });
    mesh = await startMeshProcess(install, 120_000, startScriptNodeFlags());
  } catch (err) {
    await cleanup().catch(() => undefined);
    throw err;
  }
  const token = await mesh.token();
  const gateway = new URL(install.gatewayUrl);
  const metricsUrls = {
    gateway: `${gateway.origin}/metrics`,
    mesh: `http://127.0.0.1:${install.env.KEELSON_PROJECTS_PORT}/metrics`,
  };
  const started = mesh;
  const devDb = install.devDb;
  return {
    install,
    db,
    model,
    mesh: started,
    token,
    metricsUrls,
    async processes() {
      const all = await listProcesses();
      const gw = all.find((p) => p.pgid === started.pid && p.argv.includes('apps/gateway/main.ts'));
      const temporal = (await findOwnedProcesses([['--db-filename', devDb]]))[0];
      return [{ name: 'mesh', pid: started.pid }, ...(gw ? [{ name: 'gateway', pid: gw.pid }] : []), ...(temporal ? [{ name: 'temporal', pid: temporal.pid }] : [])];
    },
    stop: cleanup,
  };
}
