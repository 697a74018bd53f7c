import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `run_nodes.prompt`: a prompt node's prompt as its turn was sent (placeholders and
 * `$ARTIFACTS_DIR` filled in), recorded by the worker before the turn starts, so readers (memory
 * capture, operators) never re-render the template.
 */
export class RunNodePrompt1764460800330 implements MigrationInterface {
  name = 'RunNodePrompt1764460800330';

  async up(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE run_nodes ADD COLUMN prompt text');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('ALTER TABLE run_nodes DROP COLUMN prompt');
  }
}
