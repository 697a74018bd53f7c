/** What the ribs subgraph needs from its environment (resolved once by config.ts). */
export interface RibsSettings {
  /** KEELSON_HOME: rib data dirs (`<home>/rib-<id>`), the config file, the credentials key file. */
  home: string;
  /** The projects subgraph's GraphQL endpoint (KEELSON_PROJECTS_URL, else the local default port). */
  projectsUrl: string;
  /** KEELSON_CREDENTIALS_KEY; absent, `<home>/credentials.key` is used (created on first use). */
  credentialsKey?: string;
  /**
   * The environment ribs run with: the host reads KEELSON_RIBS and the grant variables from it, and
   * every process a rib runs (`getExec`) inherits it (git identity, GIT_CONFIG_GLOBAL, PATH, …).
   */
  env: Record<string, string | undefined>;
}
