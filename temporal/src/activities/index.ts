import { Context } from '@temporalio/activity';

/**
 * What the activities reach the world through. Empty while echo is the only activity; later
 * activities add their services (DataSource, rib host, event log) here, injected by the worker's owner.
 */
export type ActivityDeps = Record<string, never>;

export interface EchoInput {
  message: string;
}

export interface EchoOutput {
  /** The message, upper-cased, so a caller can tell it went through the activity. */
  echoed: string;
  /** 1 on the first try; larger when Temporal retried the activity. */
  activityAttempt: number;
}

/** The activity implementations the worker registers; their names are the keys of the returned object. */
export function createActivities(_deps: ActivityDeps = {}) {
  return {
    /** Echoes the message back upper-cased, with the attempt number of this execution. */
    async echo({ message }: EchoInput): Promise<EchoOutput> {
      return { echoed: message.toUpperCase(), activityAttempt: Context.current().info.attempt };
    },
  };
}

/** The activity interface workflows proxy (`proxyActivities<Activities>`). */
export type Activities = ReturnType<typeof createActivities>;
