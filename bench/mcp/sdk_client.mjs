// sdk_client.mjs - bench/mcp's load with the official MCP TypeScript SDK
// client (@modelcontextprotocol/sdk, unmodified): CLIENTS clients in one
// node process, each connected over Streamable HTTP, calling TOOL in a loop
// for SECONDS. Prints one JSON line like loadgen.
//   node sdk_client.mjs URL TOOL CLIENTS SECONDS [HEADER:VALUE...]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, tool, clientsArg, secsArg, ...hdrs] = process.argv.slice(2);
const headers = {};
for (const h of hdrs) {
  const i = h.indexOf(":");
  headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
}
const n = Number(clientsArg), secs = Number(secsArg);
const clients = await Promise.all(
  Array.from({ length: n }, async () => {
    const c = new Client({ name: "bench", version: "1" });
    await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    return c;
  }),
);
const lat = [];
let errors = 0;
const end = performance.now() + secs * 1000;
await Promise.all(
  clients.map(async (c) => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        const r = await c.callTool({ name: tool, arguments: { message: "hello" } });
        if (r.isError) errors++;
      } catch {
        errors++;
      }
      lat.push(performance.now() - t0);
    }
  }),
);
lat.sort((a, b) => a - b);
const pct = (p) => (lat.length ? lat[Math.floor((lat.length - 1) * p)] : 0);
console.log(JSON.stringify({
  calls: lat.length, errors, calls_per_s: +(lat.length / secs).toFixed(1),
  p50_ms: +pct(0.5).toFixed(3), p90_ms: +pct(0.9).toFixed(3), p99_ms: +pct(0.99).toFixed(3),
}));
await Promise.all(clients.map((c) => c.close().catch(() => {})));
process.exit(0);
