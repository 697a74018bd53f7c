import type { Logger } from '@keelson/service';

/** When a problem was caught: the seed's Validation rules say where each lands. */
export type RibWarningStage = 'discovery' | 'filter' | 'activation' | 'request' | 'runtime';

/** A problem the host warned about instead of failing. */
export interface RibWarning {
  stage: RibWarningStage;
  /** A stable name for the rule that was broken (e.g. `shape`, `namespace`, `tool-collision`). */
  rule: string;
  message: string;
  ribId?: string;
}

/** Reports a warning. */
export type WarningSink = (warning: RibWarning) => void;

/**
 * A sink that logs each warning and forwards it to `onWarning`. Per-request warnings (descriptors
 * re-checked on every manifest read) are logged once per distinct message, so a broken descriptor
 * does not flood the log; `onWarning` still sees every occurrence.
 */
export function createWarningSink(logger: Logger, onWarning?: WarningSink): WarningSink {
  const loggedRequestWarnings = new Set<string>();
  return (warning) => {
    const once = warning.stage !== 'request' || !loggedRequestWarnings.has(warning.message);
    if (warning.stage === 'request') loggedRequestWarnings.add(warning.message);
    if (once) logger.warn({ stage: warning.stage, rule: warning.rule, ribId: warning.ribId }, warning.message);
    onWarning?.(warning);
  };
}
