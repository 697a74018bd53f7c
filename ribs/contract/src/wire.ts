import type { RibActionResult } from './actions';
import type { AgentSummary } from './agents';
import type { RibAuthStatus } from './auth';
import type { RibCommandDescriptor } from './commands';
import type { CrossRibGrantsMap } from './crossRib';
import type { RibSurfaceDescriptor } from './surfaces';
import type { RegisteredToolInfo } from './tools';
import type { RibViewDescriptor } from './views';

/**
 * One active rib as the manifest serves it. `views` and `surfaces` are always present (possibly
 * empty) and re-validated per request; `auth` appears only when the rib declares `authStatus`.
 */
export interface RibSummary {
  id: string;
  displayName: string;
  /** True for an activated rib (installed-but-filtered ribs are not served). */
  registered: boolean;
  views: RibViewDescriptor[];
  surfaces: RibSurfaceDescriptor[];
  hasOnAction: boolean;
  acceptsIngest: boolean;
  auth?: RibAuthStatus;
  /** The tools this rib owns in the shared registry. */
  tools: RegisteredToolInfo[];
}

/**
 * The manifest. `crossRibGrants` absent (null) means "not reported"; an empty map means "reported,
 * and there are none".
 */
export interface ListRibsResponse {
  ribs: RibSummary[];
  crossRibGrants?: CrossRibGrantsMap | null;
}

/** An agent with its owning rib, so a resolve routes back and equal slugs disambiguate. */
export interface AgentRef extends AgentSummary {
  ribId: string;
}

/** A command with its owning rib. */
export interface CommandRef extends RibCommandDescriptor {
  ribId: string;
}

/** `POST …/ribs/:id/action` (seed 000): the discriminated result the rib's onAction produced. */
export type RibActionResponse = RibActionResult;

/** `GET …/agents` (seed 000): the named chat agents ribs offer. */
export interface ListAgentsResponse {
  agents: AgentRef[];
}
