// bench/llm/portkey_fetch.mjs: loaded into Portkey's node (--import) by
// bench/llm/run.sh. Portkey 1.15.2 appends headers to the upstream's streamed
// fetch Response, whose headers are immutable on Node (20 and 22 alike:
// "TypeError: immutable", Portkey-AI/gateway#1389, #1550), so every streamed
// call fails with HTTP 500. An event stream's Response is re-wrapped in a
// new one (same status, headers and body stream, mutable headers); every
// other answer is left as fetch returned it. Its cost (one object a stream)
// is Portkey's in the figures.
const upstreamFetch = globalThis.fetch;
globalThis.fetch = async (...args) => {
  const r = await upstreamFetch(...args);
  if (!(r.headers.get('content-type') || '').includes('text/event-stream')) return r;
  return new Response(r.body, { status: r.status, statusText: r.statusText, headers: r.headers });
};
