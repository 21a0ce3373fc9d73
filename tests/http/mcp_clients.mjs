// mcp_clients.mjs - the official MCP TypeScript SDK clients, unmodified,
// against the awooop MCP gateway: @modelcontextprotocol/sdk (v1, protocol
// 2025-11-25: initialize and a session) and @modelcontextprotocol/client (v2,
// 2026-07-28 pinned, then automatic negotiation: server/discover and the
// Mcp-Method / Mcp-Name headers). Each lists the tools, calls one tool of each
// upstream, lists and reads the resources and lists the prompts one upstream
// relays, and sees a gate refusal as a JSON-RPC error with its data.code.
// The v1 client also answers what the upstreams ask during a call (sampling
// over stdio, elicitation over HTTP) and gets their progress notifications;
// the v2 ones (2026-07-28: no stream to ask them on) see sampling refused.
// The v1 client subscribes to a resource of the HTTP upstream and gets its
// update on the session's GET stream.
// Prints one JSON line per client; exits 1 on any failure.
//   node mcp_clients.mjs URL KEY
import { Client as V1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as V1HTTP } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
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
    if (label === "sdk-v1") {
      const sampled = await client.callTool({ name: "trigger-sampling-request__ev", arguments: { prompt: "hi", maxTokens: 5 } });
      out.sampling = sampled.content?.[0]?.text ?? "";
      const elicited = await client.callTool({ name: "trigger-elicitation-request__evh", arguments: {} });
      out.elicitation = (elicited.content ?? []).map((c) => c.text).join("\n");
      for (const prov of ["ev", "evh"]) {
        const seen = [];
        await client.callTool({ name: `trigger-long-running-operation__${prov}`, arguments: { duration: 0.3, steps: 3 } },
          undefined, { onprogress: (p) => seen.push(p.progress) });
        out[`progress_${prov}`] = seen;
      }
    } else {
      try {
        const r = await client.callTool({ name: "trigger-sampling-request__ev", arguments: { prompt: "hi", maxTokens: 5 } });
        out.sampling = r.isError ? "refused" : "answered";
      } catch (e) {
        out.sampling = "refused";
      }
    }
    const res = await client.listResources();
    out.resources = res.resources.length;
    const read = await client.readResource({ uri: res.resources[0].uri });
    out.read = read.contents.length;
    if (label === "sdk-v1") { // an update of a subscribed resource, on the session's GET stream
      const uri = res.resources[0].uri;
      const updated = new Promise((resolve) =>
        client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)));
      await client.subscribeResource({ uri });
      await new Promise((r) => setTimeout(r, 500));
      await client.callTool({ name: "toggle-subscriber-updates__evh", arguments: {} });
      out.updated = (await Promise.race([updated, new Promise((r) => setTimeout(() => r("none"), 12000))])) === uri;
      await client.callTool({ name: "toggle-subscriber-updates__evh", arguments: {} });
      await client.unsubscribeResource({ uri });
    }
    out.prompts = (await client.listPrompts()).prompts.length;
    await client.close();
  } catch (e) {
    out.error = String(e?.message ?? e);
    failed = 1;
  }
  console.log(JSON.stringify(out));
}

const v1 = new V1({ name: "t1", version: "1" }, { capabilities: { sampling: {}, elicitation: {} } });
v1.setRequestHandler(CreateMessageRequestSchema, async () =>
  ({ role: "assistant", content: { type: "text", text: "sampled-by-client" }, model: "test-model", stopReason: "endTurn" }));
v1.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada", check: true } }));
await exercise("sdk-v1", v1, new V1HTTP(new URL(url), { requestInit: { headers } }));
await exercise("client-v2-pinned",
  new V2({ name: "t2", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } }),
  new V2HTTP(new URL(url), { requestInit: { headers } }));
await exercise("client-v2-auto",
  new V2({ name: "t3", version: "1" }, { versionNegotiation: { mode: "auto" } }),
  new V2HTTP(new URL(url), { requestInit: { headers } }));
process.exit(failed);
