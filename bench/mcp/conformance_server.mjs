// conformance_server.mjs - an MCP server with the official SDK
// (@modelcontextprotocol/sdk, unmodified) offering what the conformance
// suite's server scenarios ask for: the test_* tools (text, image, audio,
// embedded resource, mixed content, an error result, logging, progress,
// sampling, elicitation), test:// resources (static text and binary, a
// template, a subscribable one), the test_* prompts and completion. Used by
// bench/mcp/conformance.sh as the upstream measured directly and through the
// gateway. Streamable HTTP with sessions on PORT.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CreateMessageResultSchema, ElicitResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

async function build() {
  const s = new McpServer({ name: "conformance-upstream", version: "1.0.0" },
    { capabilities: { logging: {}, completions: {}, resources: { subscribe: true } } });
  const text = (t) => ({ content: [{ type: "text", text: t }] });
  s.registerTool("test_simple_text", { description: "Simple text" }, async () => text("This is a simple text response for testing."));
  s.registerTool("test_image_content", { description: "Image" }, async () =>
    ({ content: [{ type: "image", data: PNG, mimeType: "image/png" }] }));
  s.registerTool("test_audio_content", { description: "Audio" }, async () =>
    ({ content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] }));
  s.registerTool("test_embedded_resource", { description: "Embedded resource" }, async () =>
    ({ content: [{ type: "resource", resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "Embedded resource content" } }] }));
  s.registerTool("test_multiple_content_types", { description: "Mixed" }, async () => ({ content: [
    { type: "text", text: "Multiple content types test:" },
    { type: "image", data: PNG, mimeType: "image/png" },
    { type: "resource", resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: "{\"test\":\"data\"}" } }] }));
  s.registerTool("test_error_handling", { description: "Error result" }, async () =>
    ({ isError: true, content: [{ type: "text", text: "This tool intentionally returns an error for testing" }] }));
  s.registerTool("test_tool_with_logging", { description: "Logs" }, async (extra) => {
    for (const m of ["Tool execution started", "Tool processing data", "Tool execution completed"]) {
      await extra.sendNotification({ method: "notifications/message", params: { level: "info", data: m } });
      await new Promise((r) => setTimeout(r, 20));
    }
    return text("Tool with logging executed successfully");
  });
  s.registerTool("test_tool_with_progress", { description: "Progress" }, async (extra) => {
    const token = extra._meta?.progressToken;
    for (const p of [0, 50, 100]) {
      if (token !== undefined)
        await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: p, total: 100 } });
      await new Promise((r) => setTimeout(r, 20));
    }
    return text(String(token ?? "no token"));
  });
  // sampling and elicitation are asked on the tool call's own response
  // stream (related to the request, as the specification says they SHOULD
  // be), so a client - or a gateway - knows which call they belong to
  s.registerTool("test_sampling", { description: "Sampling", inputSchema: { prompt: z.string() } }, async ({ prompt }, extra) => {
    const r = await extra.sendRequest({ method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens: 100 } }, CreateMessageResultSchema);
    return text(`LLM response: ${r.content?.text ?? ""}`);
  });
  s.registerTool("test_elicitation", { description: "Elicitation", inputSchema: { message: z.string() } }, async ({ message }, extra) => {
    const r = await extra.sendRequest({ method: "elicitation/create", params: { message, requestedSchema: { type: "object", properties: { username: { type: "string" }, email: { type: "string" } }, required: ["username", "email"] } } }, ElicitResultSchema);
    return text(`User response: ${JSON.stringify(r)}`);
  });
  s.registerTool("test_elicitation_sep1034_defaults", { description: "Elicitation with defaults" }, async (extra) => {
    const r = await extra.sendRequest({ method: "elicitation/create", params: { message: "Defaults", requestedSchema: { type: "object", properties: {
      name: { type: "string", default: "John Doe" }, age: { type: "integer", default: 30 }, score: { type: "number", default: 95.5 },
      status: { type: "string", enum: ["active", "inactive", "pending"], default: "active" }, verified: { type: "boolean", default: true } } } } }, ElicitResultSchema);
    return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  });
  s.registerTool("test_elicitation_sep1330_enums", { description: "Elicitation with enums" }, async (extra) => {
    const r = await extra.sendRequest({ method: "elicitation/create", params: { message: "Enums", requestedSchema: { type: "object", properties: {
      untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
      titledSingle: { type: "string", oneOf: [{ const: "value1", title: "First" }, { const: "value2", title: "Second" }] },
      legacyEnum: { type: "string", enum: ["opt1", "opt2"], enumNames: ["Option One", "Option Two"] },
      untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
      titledMulti: { type: "array", items: { anyOf: [{ const: "value1", title: "First" }, { const: "value2", title: "Second" }] } } } } } }, ElicitResultSchema);
    return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
  });
  s.registerResource("static-text", "test://static-text", { mimeType: "text/plain" }, async (uri) =>
    ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "This is the content of the static text resource." }] }));
  s.registerResource("static-binary", "test://static-binary", { mimeType: "image/png" }, async (uri) =>
    ({ contents: [{ uri: uri.href, mimeType: "image/png", blob: PNG }] }));
  s.registerResource("watched", "test://watched-resource", { mimeType: "text/plain" }, async (uri) =>
    ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "watched" }] }));
  s.registerResource("template", new ResourceTemplate("test://template/{id}/data", { list: undefined }),
    { mimeType: "application/json" }, async (uri, { id }) =>
      ({ contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }) }] }));
  s.registerPrompt("test_simple_prompt", { description: "Simple" }, async () =>
    ({ messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }] }));
  s.registerPrompt("test_prompt_with_arguments", { description: "Arguments", argsSchema: { arg1: z.string(), arg2: z.string() } },
    async ({ arg1, arg2 }) => ({ messages: [{ role: "user", content: { type: "text", text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }] }));
  s.registerPrompt("test_prompt_with_embedded_resource", { description: "Embedded", argsSchema: { resourceUri: z.string() } },
    async ({ resourceUri }) => ({ messages: [
      { role: "user", content: { type: "resource", resource: { uri: resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } } },
      { role: "user", content: { type: "text", text: "Please process the embedded resource above." } }] }));
  s.registerPrompt("test_prompt_with_image", { description: "Image" }, async () => ({ messages: [
    { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
    { role: "user", content: { type: "text", text: "Please analyze the image above." } }] }));
  s.server.setRequestHandler((await import("@modelcontextprotocol/sdk/types.js")).SubscribeRequestSchema, async () => ({}));
  s.server.setRequestHandler((await import("@modelcontextprotocol/sdk/types.js")).UnsubscribeRequestSchema, async () => ({}));
  s.server.setRequestHandler((await import("@modelcontextprotocol/sdk/types.js")).CompleteRequestSchema, async () =>
    ({ completion: { values: ["testValue1", "testValue2"], total: 2, hasMore: false } }));
  return s;
}

const sessions = new Map();
http.createServer(async (req, res) => {
  let body = "";
  for await (const chunk of req) body += chunk;
  const parsed = body ? JSON.parse(body) : undefined;
  const sid = req.headers["mcp-session-id"];
  let t = sid ? sessions.get(sid) : undefined;
  if (!t && parsed?.method === "initialize") {
    t = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => sessions.set(id, t) });
    await (await build()).connect(t);
  }
  if (!t) { res.writeHead(sid ? 404 : 400).end(); return; }
  await t.handleRequest(req, res, parsed);
}).listen(Number(process.env.PORT), "127.0.0.1");
