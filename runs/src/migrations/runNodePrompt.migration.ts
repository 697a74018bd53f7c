import { sqlMigration } from '@keelson/platform';

/**
 * `run_nodes.prompt`: a prompt node's prompt as its turn was sent (placeholders and
 * `$ARTIFACTS_DIR` filled in), recorded by the worker before the turn starts, so readers (memory
 * capture, operators) never re-render the template.
 */
export const RunNodePrompt1764460800330 = sqlMigration('RunNodePrompt1764460800330', {
  up: [
    'ALTER TABLE run_nodes ADD COLUMN prompt text',
  ],
  down: [
    'ALTER TABLE run_nodes DROP COLUMN prompt',
  ],
});
