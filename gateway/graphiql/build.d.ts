/** Bundles GraphiQL into `dist` (see build.js); resolves to the folder. */
/** `replace: false` keeps a bundle another process finished meanwhile. */
export function buildGraphiQL(options?: { quiet?: boolean; replace?: boolean }): Promise<string>;
/** The bundle's folder. */
export const dist: string;
/** Written last by a build: its presence says the bundle is whole. */
export const manifestFile: string;
