import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fake package to write into a temp node_modules. */
export interface FakePackage {
  /** The folder under `node_modules/@keelson/` (e.g. `rib-demo`). */
  dir: string;
  /** The package.json `name`. @default `@keelson/<dir>` */
  name?: string;
  /** The CommonJS source of `index.js`. */
  index: string;
  /** Files under `workflows/`, by name. */
  workflows?: Record<string, string>;
}

/** A throwaway folder holding `node_modules` roots; removed by `cleanup`. */
export class TempModules {
  readonly dir = mkdtempSync(join(tmpdir(), 'keelson-ribs-'));

  /** Writes packages into `<dir>/<root>/node_modules/@keelson/` and returns that node_modules path. */
  root(name: string, packages: readonly FakePackage[]): string {
    const nodeModules = join(this.dir, name, 'node_modules');
    for (const pkg of packages) {
      const dir = join(nodeModules, '@keelson', pkg.dir);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: pkg.name ?? `@keelson/${pkg.dir}`, version: '1.0.0', main: 'index.js' }));
      writeFileSync(join(dir, 'index.js'), pkg.index);
      for (const [file, text] of Object.entries(pkg.workflows ?? {})) {
        mkdirSync(join(dir, 'workflows'), { recursive: true });
        writeFileSync(join(dir, 'workflows', file), text);
      }
    }
    return nodeModules;
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The CommonJS source of a package default-exporting a rib object literal. */
export function ribModule(literal: string): string {
  return `"use strict";\nObject.defineProperty(exports, "__esModule", { value: true });\nexports.default = ${literal};\n`;
}
