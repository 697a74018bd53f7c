// npm run mcp: MCP over stdio for a local client (claude-code, an IDE), bridged to the mesh's /mcp.
// Nothing but the protocol goes to stdout; trouble goes to stderr.
import { mcpBridgeSettings, startMcpStdioBridge } from '@keelson/gateway';

const warn = (message: string) => process.stderr.write(`${message}\n`);
let settings;
try {
  settings = mcpBridgeSettings(process.env);
} catch (err) {
  warn(`mcp: ${(err as Error).message}`);
  process.exit(1);
}
startMcpStdioBridge({ ...settings, warn }).then(
  (bridge) => bridge.closed.then(() => process.exit(0)),
  (err: unknown) => {
    warn(`mcp: ${(err as Error).message}`);
    process.exit(1);
  },
);
