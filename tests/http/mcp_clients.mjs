// mcp_clients.mjs - the official MCP TypeScript SDK clients, unmodified,
// against the awooop MCP gateway: @modelcontextprotocol/sdk (v1, protocol
// 2025-11-25: initialize and a session) and @modelcontextprotocol/client (v2,
// 2026-07-28 pinned, then automatic negotiation: server/discover and the
// Mcp-Method / Mcp-Name headers). Each lists the tools, calls one tool of each
// upstream, lists and reads the resources and lists the prompts one upstream
// relays, and sees a gate refusal as a JSON-RPC error with its data.code.
// Prints one JSON line per client; exits 1 on any failure.
//   node mcp_clients.mjs URL KEY
import { Client as V1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as V1HTTP } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as V2, StreamableHTTPClientTransport as V2HTTP } from "@modelcontextprotocol/client";

const [url, key] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${key}` };
let failed = 0;

async function exercise(label, client, transport) {
  const out = { client: label };
  try {
    await client.connect(transport);
    out.version = transport.protocolVersion ?? client.getNegotiatedProtocolVersion?.() ?? null;
    const tools = await client.listTools();
    out.tools = tools.tools.map((t) => t.name).sort();
    const echo = await client.callTool({ name: "echo__ev", arguments: { message: "over stdio" } });
    out.echo = echo.content?.[0]?.text;
    const sum = await client.callTool({ name: "get-sum__evh", arguments: { a: 2, b: 40 } });
    out.sum = sum.content?.[0]?.text;
    try {
      await client.callTool({ name: "nope__ev", arguments: {} });
      out.refusal = "none";
    } catch (e) {
      out.refusal = { code: e.code, data: e.data?.code ?? null };
    }
    try {
      await client.callTool({ name: "echo__ev", arguments: { message: 42 } });
      out.bad_args = "none";
    } catch (e) {
      out.bad_args = { code: e.code, data: e.data?.code ?? null };
    }
    const res = await client.listResources();
    out.resources = res.resources.length;
    const read = await client.readResource({ uri: res.resources[0].uri });
    out.read = read.contents.length;
    out.prompts = (await client.listPrompts()).prompts.length;
    await client.close();
  } catch (e) {
    out.error = String(e?.message ?? e);
    failed = 1;
  }
  console.log(JSON.stringify(out));
}

await exercise("sdk-v1", new V1({ name: "t1", version: "1" }),
  new V1HTTP(new URL(url), { requestInit: { headers } }));
await exercise("client-v2-pinned",
  new V2({ name: "t2", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } }),
  new V2HTTP(new URL(url), { requestInit: { headers } }));
await exercise("client-v2-auto",
  new V2({ name: "t3", version: "1" }, { versionNegotiation: { mode: "auto" } }),
  new V2HTTP(new URL(url), { requestInit: { headers } }));
process.exit(failed);
