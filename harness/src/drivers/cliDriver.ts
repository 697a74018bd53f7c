import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { MeshError } from '@keelson/schema';
import { locateBinary, nodeBinDir, type BinarySpec, type LocatedBinary } from '../binaries';
import type { CapabilityName, CapabilityReport, DriverEvent, HarnessCapabilities, SessionSummary, TaskExecutorInfo, TranscriptEntry } from '../contract';
import type { HarnessId } from '../ids';
import type { HarnessSettings } from '../settings';

/** One headless turn as a driver turns it into a command line. */
export interface TurnSpec {
  /** The native session to resume or pin; null for a session the CLI mints itself (read from its output). */
  nativeId: string | null;
  /** The first turn of a session the mesh pinned (claude-code/qwen-code `--session-id` instead of `--resume`). */
  fresh: boolean;
  cwd: string;
  text: string;
  /** Absolute paths of files: inside `cwd`, or uploads (checked by the control plane; bound readable into the sandbox). */
  attachments: string[];
  /** Tools an approval granted for this turn (claude-code `--allowedTools`). */
  allowTools: string[];
  /** The turn's model (checked against the driver's choices), else the CLI's configured one. */
  model?: string;
  /** The turn's reasoning effort (one of the driver's `efforts`), else the CLI's default. */
  effort?: string;
  /** KEELSON_SESSION_ID, KEELSON_TASK_ID, …: set in the child's environment. */
  env: Record<string, string>;
  /** Where the CLI asks before a tool runs (drivers with `permissionHook`): the mesh's MCP endpoint and this turn's secret. */
  permissionPrompt?: { url: string; secret: string };
}

export interface TurnCommand {
  /** argv[0] is the CLI's absolute path. */
  argv: string[];
  /** The child's whole environment. */
  env: Record<string, string>;
}

export interface TurnResult {
  ok: boolean;
  /** The CLI's final answer text. */
  text?: string | null;
  error?: string | null;
}

/** What one line of CLI output means to the mesh. */
export interface MappedOutput {
  events: DriverEvent[];
  /** The native session id the CLI announced (thread.started, system/init, session header, sessionID). */
  nativeId?: string;
  /** The CLI reported the turn's end. */
  result?: TurnResult;
}

/** Turns a CLI's JSONL/stream-json output, line by line, into HarnessEvents. One per turn. */
export interface OutputMapper {
  line(value: Record<string, unknown>): MappedOutput;
  /** The outcome for CLIs that print no result line, once output ended. */
  finish?(): TurnResult;
}

export interface DriverFeatures {
  /** How a new session's id is fixed before its first turn, if it can be. */
  pinning: 'session-id' | 'file-path' | 'none';
  approvals: boolean;
  attachments: boolean;
  /** Input reaches a running turn (a steer goes into the live turn). @default false */
  midTurnInput?: boolean;
  /** The CLI asks a permission hook before a tool runs (claude-code's `--permission-prompt-tool`). @default false */
  permissionHook?: boolean;
  /** Why a feature is off (shown as the capability's reason). */
  reasons: Partial<Record<'startSession' | 'approvals' | 'attachments' | 'midTurnInput' | 'approvalsBeforeTool', string>>;
}

export const EMPTY: MappedOutput = { events: [] };

/** A record of unknown JSON, or an empty one. */
export function rec(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
export function stringOrUndefined(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/**
 * A harness driver for one coding-agent CLI run headless: where its binary is, the capabilities it
 * honestly has on this node (computed when read), the isolated HOME and config it runs with under
 * `<KEELSON_HOME>/harness/<id>/`, its command line per turn, how its output maps to HarnessEvents
 * and how its native session store is read. Stateless apart from the config files it writes.
 */
export abstract class CliDriver {
  abstract readonly harnessId: HarnessId;
  abstract readonly displayName: string;
  abstract readonly binary: BinarySpec;
  abstract readonly features: DriverFeatures;
  /** False for harnesses without a headless driver in this mesh (their operations are 501). */
  readonly implemented: boolean = true;
  /** The reasoning efforts a turn may ask for (`Harness.efforts`), by the CLI's own flag; empty when it has none. */
  readonly efforts: readonly string[] = [];
  /** Why `efforts` is empty. */
  readonly effortsReason: string = 'this CLI takes no reasoning effort';
  /**
   * True when the driver's config declares the only models the CLI can use (a turn naming another
   * fails in the CLI): such a model is refused up front.
   */
  protected readonly declaredModelsOnly: boolean = false;
  private prepared: Promise<void> | undefined;

  constructor(protected readonly settings: HarnessSettings) {}

  /** `<KEELSON_HOME>/harness/<id>`: everything this CLI writes on the mesh's behalf lives here. */
  get root(): string {
    return join(this.settings.keelsonHome, 'harness', this.harnessId);
  }

  /** The HOME the CLI runs with. */
  get homeDir(): string {
    return join(this.root, 'home');
  }

  /** The CLI's executable, looked up now (installs and removals show on the next read). */
  locate(): Promise<LocatedBinary | undefined> {
    return locateBinary(this.binary, this.settings.path);
  }

  /** The binary, or CAPABILITY_UNSUPPORTED saying it is missing. */
  async requireBinary(): Promise<LocatedBinary> {
    const found = await this.locate();
    if (!found) throw new MeshError('CAPABILITY_UNSUPPORTED', `${this.harnessId}: ${this.missingReason()}`);
    return found;
  }

  protected missingReason(): string {
    return this.binary.npm
      ? `the \`${this.binary.command}\` binary is not installed (npm package ${this.binary.npm.pkg}, nor on PATH)`
      : `the \`${this.binary.command}\` binary is not on PATH`;
  }

  /**
   * The models a turn may name (`Harness.models`): the configured one first, then the CLI's own
   * aliases. Where `declaredModelsOnly`, the whole list; elsewhere the provider takes other ids too.
   */
  models(): string[] {
    return this.settings.model ? [this.settings.model] : [];
  }

  /**
   * A turn's model and effort, checked before anything starts: an effort this CLI cannot take is
   * CAPABILITY_UNSUPPORTED, one outside `efforts` or a model outside a declared list BAD_USER_INPUT.
   */
  checkChoice(choice: { model?: string | null; effort?: string | null }): void {
    const { model, effort } = choice;
    if (effort != null) {
      if (!this.efforts.length) {
        throw new MeshError('CAPABILITY_UNSUPPORTED', `${this.harnessId} takes no reasoning effort: ${this.effortsReason}`, { harnessId: this.harnessId, capability: 'effort' });
      }
      if (!this.efforts.includes(effort)) throw new MeshError('BAD_USER_INPUT', `effort: ${this.harnessId} takes one of ${this.efforts.join(', ')}, not ${JSON.stringify(effort)}`);
    }
    if (model != null && this.declaredModelsOnly && !this.models().includes(model)) {
      throw new MeshError('BAD_USER_INPUT', `model: ${this.harnessId} runs only the models its config declares (${this.models().join(', ')}), not ${JSON.stringify(model)}`);
    }
  }

  /** The flags and the reason for each false one, computed now. */
  async report(): Promise<CapabilityReport> {
    const found = this.implemented ? await this.locate() : await this.locate().catch(() => undefined);
    const flags: HarnessCapabilities = {
      interrupt: false,
      resume: false,
      approvals: false,
      liveStream: false,
      listSessions: false,
      startSession: false,
      attachments: false,
      midTurnInput: false,
      approvalsBeforeTool: false,
    };
    const reasons: Partial<Record<CapabilityName, string>> = {};
    if (!this.implemented || !found) {
      const why = !found ? this.missingReason() : `no headless driver for ${this.harnessId} is wired in this mesh`;
      for (const name of Object.keys(flags) as CapabilityName[]) reasons[name] = why;
      return { harnessId: this.harnessId, installed: Boolean(found), version: found?.version ?? null, flags, reasons };
    }
    flags.interrupt = true; // the turn's whole process group is killed
    flags.resume = true;
    flags.liveStream = true; // the CLI's JSONL is mapped to events as it is written
    flags.listSessions = true;
    flags.startSession = this.features.pinning !== 'none';
    if (!flags.startSession) reasons.startSession = this.features.reasons.startSession ?? `${this.harnessId} cannot pin a new session id`;
    flags.approvals = this.features.approvals;
    if (!flags.approvals) reasons.approvals = this.features.reasons.approvals ?? `${this.harnessId} reports no permission requests headless`;
    flags.attachments = this.features.attachments;
    if (!flags.attachments) reasons.attachments = this.features.reasons.attachments ?? `${this.harnessId} takes no file attachments headless`;
    flags.midTurnInput = this.features.midTurnInput ?? false;
    if (!flags.midTurnInput) {
      reasons.midTurnInput =
        this.features.reasons.midTurnInput ??
        `the mesh runs ${this.harnessId} headless with the turn's text as an argument and stdin closed, so nothing reaches a running turn: a steer waits for the turn's end and runs as the next turn`;
    }
    flags.approvalsBeforeTool = (this.features.permissionHook ?? false) && this.permissionHooks;
    if (!flags.approvalsBeforeTool) {
      reasons.approvalsBeforeTool = !this.features.permissionHook
        ? (this.features.reasons.approvalsBeforeTool ?? `${this.harnessId} has no permission hook headless: a tool it may not use is reported after the turn (approvals), and an approval re-runs it as a next turn`)
        : 'this sessions service serves no permission endpoint, so the CLI cannot ask before a tool runs';
    }
    return { harnessId: this.harnessId, installed: true, version: found.version, flags, reasons };
  }

  /** Whether this process serves the permission endpoint the hook calls (set by the control plane). */
  permissionHooks = false;

  /** Whether `runTask` can run this harness now, and why not. */
  async taskExecutor(): Promise<TaskExecutorInfo> {
    if (!this.implemented) return { implemented: false, reason: `no headless task executor for ${this.harnessId} in this mesh; ${(await this.report()).reasons.resume}` };
    if (!(await this.locate())) return { implemented: false, reason: this.missingReason() };
    return { implemented: true, reason: null };
  }

  /** Writes the CLI's config under its root (once per process; idempotent). */
  prepare(): Promise<void> {
    this.prepared ??= (async () => {
      await mkdir(this.homeDir, { recursive: true });
      await this.writeConfig();
    })().catch((err: unknown) => {
      this.prepared = undefined;
      throw err;
    });
    return this.prepared;
  }

  /** A fresh native id for a pinned session. */
  newNativeId(): string {
    return randomUUID();
  }

  /** Drops anything cached about the native store (a turn just wrote to it). */
  touched(): void {}

  /** Fixes a new session's id before its first turn (pi: the session file). */
  async pin(_nativeId: string, _cwd: string): Promise<void> {}

  /**
   * The turn's command line confined by the mesh's sandbox (`settings.sandbox`): writable only the
   * cwd (its `.git` and `.keelson` read-only) and this CLI's own folder (its HOME, config and native
   * store), a private /tmp, the rest of the keelson home hidden, the network on (the CLI calls its
   * model endpoint), `readable` (a turn's uploaded attachments) readable. Unchanged when KEELSON_SANDBOX is off.
   * @throws SandboxUnavailableError (CAPABILITY_UNSUPPORTED) when the sandbox is required and bubblewrap is unusable
   */
  async confine(cmd: TurnCommand, cwd: string, readable: readonly string[] = []): Promise<TurnCommand> {
    const { argv, sandboxed } = await this.settings.sandbox.command({ argv: cmd.argv, cwd, writable: [cwd, this.root], readable, network: true, what: `a ${this.harnessId} turn` });
    return { argv, env: sandboxed ? { ...cmd.env, TMPDIR: '/tmp' } : cmd.env };
  }

  /**
   * The environment every CLI gets: the platform's `sandboxEnv` allowlist of the process's (nothing of
   * the mesh's own — no DATABASE_URL, no Temporal, no secrets or model keys), then its own HOME, PATH
   * and locale; each driver adds exactly what its CLI needs (its model endpoint and key).
   */
  protected baseEnv(spec: TurnSpec): Record<string, string> {
    const env: Record<string, string> = {
      ...this.settings.inheritedEnv,
      PATH: `${nodeBinDir()}:${this.settings.path}`,
      HOME: this.homeDir,
      LANG: 'C.UTF-8',
      TERM: 'dumb',
      NO_COLOR: '1',
      CI: '1',
      ...spec.env,
    };
    if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
    return env;
  }

  /** The model endpoint for OpenAI-protocol CLIs (`<base>/v1`), or null. */
  protected openaiBaseUrl(): string | null {
    return this.settings.modelBaseUrl ? `${this.settings.modelBaseUrl}/v1` : null;
  }

  protected abstract writeConfig(): Promise<void>;
  abstract command(binary: string, spec: TurnSpec): Promise<TurnCommand>;
  /** Maps the CLI's output; `liveApprovals`: the turn asks before a tool runs, so reported denials are not approvals. */
  abstract mapper(opts?: { liveApprovals?: boolean }): OutputMapper;
  /** Whether the native store holds this session yet (a pinned session has none before its first turn). */
  abstract hasNative(nativeId: string): Promise<boolean>;
  abstract listNative(): Promise<SessionSummary[]>;
  abstract findNative(nativeId: string): Promise<SessionSummary | null>;
  /** The session's transcript as the CLI stored it (the source of truth), oldest first; [] when none. */
  abstract transcript(nativeId: string): Promise<TranscriptEntry[]>;
}
