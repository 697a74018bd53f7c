import { MeshError } from '@keelson/schema';
import type { SessionSummary, TranscriptEntry } from '../contract';
import type { HarnessId } from '../ids';
import type { HarnessSettings } from '../settings';
import { CliDriver, type DriverFeatures, type OutputMapper, type TurnCommand } from './cliDriver';

/**
 * A harness of the seed with no headless driver in this mesh (its CLI is not on npm here):
 * `installed` says whether its binary happens to be on PATH, every capability is false with the
 * reason, and every operation answers CAPABILITY_UNSUPPORTED — never a pretend success.
 */
export class UnavailableDriver extends CliDriver {
  override readonly implemented = false;
  readonly features: DriverFeatures = { pinning: 'none', approvals: false, attachments: false, reasons: {} };
  readonly binary: { command: string };

  constructor(
    settings: HarnessSettings,
    readonly harnessId: HarnessId,
    readonly displayName: string,
    command: string,
  ) {
    super(settings);
    this.binary = { command };
  }

  private unsupported(): never {
    throw new MeshError('CAPABILITY_UNSUPPORTED', `${this.harnessId}: no headless driver is wired in this mesh (the \`${this.binary.command}\` CLI is not on npm here)`);
  }

  protected async writeConfig(): Promise<void> {
    this.unsupported();
  }
  async command(): Promise<TurnCommand> {
    this.unsupported();
  }
  mapper(): OutputMapper {
    this.unsupported();
  }
  async hasNative(): Promise<boolean> {
    return false;
  }
  async listNative(): Promise<SessionSummary[]> {
    return [];
  }
  async findNative(): Promise<SessionSummary | null> {
    return null;
  }
  async transcript(): Promise<TranscriptEntry[]> {
    return [];
  }
}
