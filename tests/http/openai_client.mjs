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

const models = await client.models.list();
out.models = models.data.map((m) => m.id).sort();
console.log(JSON.stringify(out));
