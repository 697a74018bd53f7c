import { projectWorkflowsDir } from '@keelson/platform';
import { isUuid, MeshError } from '@keelson/schema';
import type { ProjectRef, ProjectsApi } from '../projects';
import { join } from 'node:path';
import type { CatalogEntry, CatalogLoadError } from './catalogEntry';
import type { RibWorkflowCandidate, RibWorkflowSource } from './ribSource';
import { loadWorkflowDir, parseDefinitionText, ParsedFiles, validated } from './workflowFiles';

/** One resolved scope: the winning entry per name, and everything rejected on the way. */
export interface Catalog {
  entries: CatalogEntry[];
  errors: CatalogLoadError[];
  /** Entries that lost to a higher-precedence one of the same name. */
  shadowed: { entry: CatalogEntry; by: CatalogEntry }[];
  /** Project workflows listed under `project:<name>` because a rib, bundled or home workflow keeps `<name>`. */
  qualified: { entry: CatalogEntry; keeps: CatalogEntry }[];
  /**
   * Seen from a project: the digest of the project's workflow files exactly as this load read them
   * (absent when one could not be read). A project workflow runs only when it equals the digest the
   * project's trust was given for, so a file changed after the trust check never runs.
   */
  projectDigest?: string;
}

/** The workflows shipped with the runs domain (`runs/workflows`). */
export const bundledWorkflowsDir = join(__dirname, '..', '..', 'workflows');

/** The prefix a project workflow's name gets when another scope's workflow has its name. */
export const PROJECT_QUALIFIER = 'project:';

export interface CatalogOptions {
  bundledDir: string;
  /** `<KEELSON_HOME>/workflows`. */
  globalDir: string;
  ribs?: RibWorkflowSource;
}

/** `<project root>/.keelson/workflows` (one definition, in @keelson/platform, with the projects subgraph's trust). */
export { projectWorkflowsDir };

/**
 * Merges rib contributions as the seed orders them: within a rib its code entry beats its own YAML;
 * across ribs the earlier-activated rib's entry is kept.
 */
export function mergeRibCandidates(candidates: readonly RibWorkflowCandidate[]): Catalog {
  const byName = new Map<string, CatalogEntry>();
  const errors: CatalogLoadError[] = [];
  const shadowed: Catalog['shadowed'] = [];
  const ribOrder: string[] = [];
  for (const c of candidates) if (!ribOrder.includes(c.ribId)) ribOrder.push(c.ribId);
  for (const ribId of ribOrder) {
    const own = candidates.filter((c) => c.ribId === ribId);
    const codeFirst = [...own.filter((c) => c.origin === 'code'), ...own.filter((c) => c.origin === 'yaml')];
    for (const c of codeFirst) {
      const where = { scope: 'RIB' as const, ribId, origin: c.origin, ...(c.path ? { path: c.path } : {}) };
      const result =
        c.origin === 'yaml' && typeof c.source === 'string'
          ? parseDefinitionText(c.source, where)
          : validated(c.definition, c.source ?? JSON.stringify(c.definition, null, 2) ?? 'null', where);
      if ('error' in result) {
        errors.push(result.error);
        continue;
      }
      const entry: CatalogEntry = { ...result.entry, scope: 'RIB', ribId, origin: c.origin };
      const kept = byName.get(entry.name);
      if (kept) shadowed.push({ entry, by: kept });
      else byName.set(entry.name, entry);
    }
  }
  return { entries: [...byName.values()], errors, shadowed, qualified: [] };
}

/** Lays `layer` over `base`: a same-named entry of the layer wins. */
function overlay(base: Catalog, layer: { entries: CatalogEntry[]; errors: CatalogLoadError[] }): Catalog {
  const byName = new Map(base.entries.map((e) => [e.name, e]));
  const shadowed = [...base.shadowed];
  for (const entry of layer.entries) {
    const lost = byName.get(entry.name);
    if (lost) shadowed.push({ entry: lost, by: entry });
    byName.set(entry.name, entry);
  }
  return { entries: [...byName.values()], errors: [...base.errors, ...layer.errors], shadowed, qualified: base.qualified };
}

/**
 * Adds a project's own workflows. In a trusted project one may shadow the home folder's workflow of
 * its name (seed 000: "a project workflow can shadow the global one"): it takes the plain name and the
 * home one is listed as shadowed. Otherwise — a rib's or a bundled workflow's name, or any name in a
 * project that is not trusted — it shadows nothing: it is listed as `project:<name>` (a name no file
 * can declare, since `:` is not a name character), and the other workflow keeps the plain name.
 */
function addProjectLayer(base: Catalog, layer: { entries: CatalogEntry[]; errors: CatalogLoadError[] }, trusted: boolean): Catalog {
  const byName = new Map(base.entries.map((e) => [e.name, e]));
  const qualified = [...base.qualified];
  const shadowed = [...base.shadowed];
  for (const entry of layer.entries) {
    const keeps = byName.get(entry.name);
    if (keeps && trusted && keeps.scope === 'GLOBAL') {
      shadowed.push({ entry: keeps, by: entry });
      byName.set(entry.name, entry);
    } else if (keeps) {
      const renamed: CatalogEntry = { ...entry, name: `${PROJECT_QUALIFIER}${entry.name}` };
      qualified.push({ entry: renamed, keeps });
      byName.set(renamed.name, renamed);
    } else byName.set(entry.name, entry);
  }
  return { entries: [...byName.values()], errors: [...base.errors, ...layer.errors], shadowed, qualified };
}

/**
 * The workflow catalog: rib contributions, then the bundled and global folders, each overriding what
 * came before (the global folder shadows a bundled workflow; any file shadows a rib entry), then the
 * project's own folder, which shadows a home workflow only in a trusted project and nothing else: a
 * colliding project workflow is otherwise listed as `project:<name>` (see `addProjectLayer`). Whether a project workflow may run is the project's trust,
 * checked where a run starts. Read per call, so edits to the folders apply to the next start (a file
 * whose text did not change is not parsed again).
 */
export class WorkflowCatalog {
  /** Files already parsed, reused while their text is unchanged. */
  private readonly parsed = new ParsedFiles();

  constructor(private readonly opts: CatalogOptions) {}

  /**
   * The catalog as seen from a project (its root's `.keelson/workflows` included), or globally.
   * `trustedDigest`: the digest the project's trust was given for; when the files read have it, the
   * project's workflows may shadow home ones.
   */
  async load(projectRoot?: string | null, trustedDigest?: string | null): Promise<Catalog> {
    // The sources are read together; they are layered in their fixed order below.
    const [ribs, bundled, global, project] = await Promise.all([
      this.opts.ribs ? this.opts.ribs.list() : [],
      loadWorkflowDir(this.opts.bundledDir, 'BUNDLED', this.parsed),
      loadWorkflowDir(this.opts.globalDir, 'GLOBAL', this.parsed),
      projectRoot ? loadWorkflowDir(projectWorkflowsDir(projectRoot), 'PROJECT', this.parsed) : undefined,
    ]);
    let catalog = overlay(overlay(mergeRibCandidates(ribs), bundled), global);
    if (project) {
      const trusted = !!trustedDigest && project.digest === trustedDigest;
      catalog = { ...addProjectLayer(catalog, project, trusted), ...(project.digest ? { projectDigest: project.digest } : {}) };
    }
    catalog.entries.sort((a, b) => a.name.localeCompare(b.name));
    return catalog;
  }
}

/** The catalog seen from a project id (looked up through the projects subgraph) or globally. */
export class CatalogService {
  constructor(
    private readonly catalog: WorkflowCatalog,
    private readonly projects: ProjectsApi,
  ) {}

  load(project: ProjectRef | null): Promise<Catalog> {
    return this.catalog.load(project?.rootPath, project?.trusted ? project.trustedWorkflowsDigest : null);
  }

  /** NOT_FOUND for a project id that names no project. */
  async forProject(projectId?: string | null): Promise<Catalog> {
    if (!projectId) return this.catalog.load();
    const project = isUuid(projectId) ? await this.projects.project(projectId) : null;
    if (!project) throw new MeshError('NOT_FOUND', `project ${JSON.stringify(projectId)} does not exist`);
    return this.load(project);
  }
}
