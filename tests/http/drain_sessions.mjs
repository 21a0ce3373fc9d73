// drain_sessions.mjs - short MCP scripts as an agent host runs them: N
// sessions of the official @modelcontextprotocol/sdk client (2025-11-25:
// initialize, the session's GET stream, a ping), each closed by the client
// right after, one after another from one address. Prints one JSON line:
// {"ok", "failed", "error"} (the first failure's message).
//   node drain_sessions.mjs URL KEY N
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key, n] = process.argv.slice(2);
const out = { ok: 0, failed: 0, error: null };
for (let i = 0; i < Number(n); i++) {
  const client = new Client({ name: "drain-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  try {
    await client.connect(transport);
    await client.ping();
    out.ok++;
  } catch (e) {
    out.failed++;
    out.error ??= String(e?.message ?? e);
  }
  await client.close().catch(() => {});
}
console.log(JSON.stringify(out));
