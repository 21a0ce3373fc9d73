// auth_shim.mjs - the MCP conformance client sends no API key; this forwarder
// adds "Authorization: Bearer KEY" and passes every byte of requests and
// answers (streams included) unchanged. Only for bench/mcp/conformance.sh.
//   node auth_shim.mjs LISTEN_PORT TARGET_URL KEY
import http from "node:http";
const [port, target, key] = process.argv.slice(2);
const t = new URL(target);
http.createServer((req, res) => {
  const headers = { ...req.headers, host: t.host, authorization: `Bearer ${key}` };
  const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: t.pathname, headers },
    (r) => { res.writeHead(r.statusCode, r.headers); r.pipe(res); });
  up.on("error", () => { res.writeHead(502); res.end(); });
  req.pipe(up);
}).listen(Number(port), "127.0.0.1");
