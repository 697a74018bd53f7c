import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@keelson/service';
import type { Rib } from '@keelson/ribs-contract';
import { createRibHost } from '../../src/createRibHost';
import { InMemoryCredentialStore, InMemoryProjectsPort, staticConfigPort } from '@keelson/host-doubles';
import { InMemorySnapshotStore } from '../../src/memory/inMemorySnapshotStore';
import type { RibHost, RibHostOptions } from '../../src/ribHost';
import type { RibWarning } from '../../src/warnings';

/** A host under test with its in-memory ports and every warning it raised. */
export interface TestHost {
  host: RibHost;
  warnings: RibWarning[];
  store: InMemorySnapshotStore;
  credentials: InMemoryCredentialStore;
  projects: InMemoryProjectsPort;
  home: string;
}

const open: RibHost[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((host) => host.dispose()));
});

/**
 * Boots a host over `ribs` (the explicit `available` map) with in-memory ports, a throwaway home,
 * no environment and a silent logger. Disposed after each test.
 */
export async function startHost(ribs: readonly Rib[] | Record<string, unknown>, options: RibHostOptions = {}): Promise<TestHost> {
  const warnings: RibWarning[] = [];
  const store = new InMemorySnapshotStore();
  const credentials = new InMemoryCredentialStore();
  const projects = new InMemoryProjectsPort();
  const home = mkdtempSync(join(tmpdir(), 'keelson-home-'));
  const available = Array.isArray(ribs) ? Object.fromEntries(ribs.map((rib) => [rib.id, rib])) : ribs;
  const host = await createRibHost({
    available,
    env: {},
    home,
    logger: silentLogger(),
    snapshotStore: store,
    credentials,
    projects,
    config: staticConfigPort({}),
    ...options,
    onWarning: (w) => {
      warnings.push(w);
      options.onWarning?.(w);
    },
  });
  open.push(host);
  return { host, warnings, store, credentials, projects, home };
}

/** Boots a host expecting activation to fail; resolves with the error and the warnings raised. */
export async function failedBoot(ribs: readonly Rib[] | Record<string, unknown>, options: RibHostOptions = {}): Promise<{ error: Error; warnings: RibWarning[] }> {
  const warnings: RibWarning[] = [];
  try {
    await startHost(ribs, { ...options, onWarning: (w) => warnings.push(w) });
  } catch (error) {
    return { error: error as Error, warnings };
  }
  throw new Error('expected boot to fail, but the host started');
}

/** A rib with the required fields and whatever else the test adds. */
export function rib(id: string, extra: Partial<Rib> = {}): Rib {
  return { id, displayName: id[0]!.toUpperCase() + id.slice(1), ...extra };
}

/** The ids of the ribs the manifest serves. */
export async function servedIds(host: RibHost): Promise<string[]> {
  return (await host.manifest()).ribs.map((r) => r.id);
}

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
