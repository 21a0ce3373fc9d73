// The official `openai` npm client, unmodified, against awooop's
// /v1/chat/completions: only the base URL and the key differ from a call to
// OpenAI. Prints one JSON line of what it saw; the shell test checks it.
//   node openai_client.mjs BASE_URL KEY [MODEL]   (MODEL: the route asked, "chat")
import OpenAI from "openai";

const [base, key, model = "chat"] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base + "/v1", apiKey: key, maxRetries: 0 });
const out = {};

const r = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "hello" }],
});
out.plain = { content: r.choices[0].message.content, usage: r.usage, object: r.object };

const stream = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "hello" }],
  stream: true,
  stream_options: { include_usage: true },
});
let text = "", chunks = 0, usage = null;
for await (const c of stream) {
  chunks++;
  if (c.choices.length) text += c.choices[0].delta.content ?? "";
  if (c.usage) usage = c.usage;
}
out.stream = { text, chunks, usage };

const tools = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "weather?" }],
  tools: [{ type: "function", function: { name: "weather", parameters: { type: "object", properties: {} } } }],
});
out.tools = { finish: tools.choices[0].finish_reason };

try {
  await client.chat.completions.create({ model: "no-such-route", messages: [{ role: "user", content: "x" }] });
  out.error = "none";
} catch (e) {
  out.error = { status: e.status, code: e.error?.code ?? null, isApiError: e instanceof OpenAI.APIError };
}

try {
  const emb = await client.embeddings.create({ model, input: ["hello", "world!"] });
  out.embeddings = { n: emb.data.length, dims: emb.data[0].embedding.length, usage: emb.usage, model: emb.model };
} catch (e) {
  out.embeddings = { status: e.status, code: e.error?.code ?? null };
}

// the Responses API: text, a function call, the stream helper
try {
  const r1 = await client.responses.create({ model, instructions: "Be brief", input: "hello", store: false });
  const rs = client.responses.stream({ model, input: [{ role: "user", content: "hi" }], store: false });
  let deltas = "";
  rs.on("response.output_text.delta", (e) => { deltas += e.delta; });
  const fin = await rs.finalResponse();
  const tools = [{ type: "function", name: "weather", parameters: { type: "object", properties: {} } }];
  const r2 = await client.responses.create({ model, input: "weather?", tools, store: false });
  const call = r2.output.find((o) => o.type === "function_call");
  const r3 = await client.responses.create({
    model, tools, store: false, tool_choice: "none",
    input: [{ role: "user", content: "weather?" },
            { type: "function_call", call_id: call.call_id, name: call.name, arguments: call.arguments },
            { type: "function_call_output", call_id: call.call_id, output: "sunny" }],
  });
  out.responses = { object: r1.object, status: r1.status, text: r1.output_text, usage: r1.usage,
                    stream: { text: fin.output.filter((o) => o.type === "message")
                                              .flatMap((o) => o.content.map((c) => c.text)).join(""), deltas, status: fin.status, usage: fin.usage },
                    call: { name: call?.name ?? null, args: call?.arguments ?? null },
                    after: r3.output.map((o) => o.type) };
} catch (e) {
  out.responses = { status: e.status ?? null, code: e.error?.code ?? null, message: String(e.message) };
}

const models = await client.models.list();
out.models = models.data.map((m) => m.id).sort();
console.log(JSON.stringify(out));
