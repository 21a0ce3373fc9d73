// The official `@anthropic-ai/sdk` npm client, unmodified, against awooop's
// Anthropic-compatible POST /v1/messages: only the base URL and the key
// differ from a call to Anthropic (the key goes as x-api-key, as the SDK
// sends it). Prints one JSON line of what it saw; the shell test checks it.
//   node anthropic_client.mjs BASE_URL KEY MODEL
import Anthropic from "@anthropic-ai/sdk";

const [base, key, model] = process.argv.slice(2);
const client = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });
const out = {};

const r = await client.messages.create({
  model,
  max_tokens: 64,
  system: "Be brief",
  messages: [{ role: "user", content: "hello" }],
});
out.plain = { type: r.type, role: r.role, model: r.model, text: r.content[0]?.text ?? null,
              stop: r.stop_reason, usage: r.usage };

// the SDK's stream helper: text events, then the final message it assembled
const stream = client.messages.stream({
  model,
  max_tokens: 64,
  messages: [{ role: "user", content: "hi" }],
});
let text = "", events = 0;
stream.on("text", (t) => { text += t; });
stream.on("streamEvent", () => { events++; });
const fin = await stream.finalMessage();
out.stream = { text, events, final: fin.content[0]?.text ?? null, stop: fin.stop_reason,
               usage: fin.usage };

// tools: a tool_use, answered with a tool_result, then the model's next turn
const tools = [{ name: "weather", description: "the weather of a city",
                 input_schema: { type: "object", properties: { city: { type: "string" } } } }];
const t1 = await client.messages.create({
  model, max_tokens: 64, tools,
  messages: [{ role: "user", content: "weather in Oslo?" }],
});
const use = t1.content.find((b) => b.type === "tool_use");
out.tools = { stop: t1.stop_reason, name: use?.name ?? null, input: use?.input ?? null };
const t2 = await client.messages.create({
  model, max_tokens: 64, tools, tool_choice: { type: "none" },
  messages: [
    { role: "user", content: "weather in Oslo?" },
    { role: "assistant", content: t1.content },
    { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }] },
  ],
});
out.tools.after = { stop: t2.stop_reason, text: t2.content[0]?.text ?? null };

// a streamed tool call, assembled by the SDK
const ts = client.messages.stream({ model, max_tokens: 64, tools,
                                    messages: [{ role: "user", content: "weather?" }] });
const tf = await ts.finalMessage();
const tu = tf.content.find((b) => b.type === "tool_use");
out.toolStream = { stop: tf.stop_reason, input: tu?.input ?? null };

try {
  await client.messages.create({ model: "no-such-route", max_tokens: 5,
                                 messages: [{ role: "user", content: "x" }] });
  out.error = "none";
} catch (e) {
  out.error = { status: e.status, type: e.error?.error?.type ?? null, code: e.error?.error?.code ?? null,
                notFound: e instanceof Anthropic.NotFoundError };
}
console.log(JSON.stringify(out));
