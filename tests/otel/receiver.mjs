// receiver.mjs - an OTLP/HTTP trace receiver for the tests (loopback only).
// Every POST /v1/traces is held to the OTLP JSON encoding and decoded with the
// OpenTelemetry JS packages from npm:
//   1. the body is checked against the OTLP JSON mapping of
//      ExportTraceServiceRequest (the fields of the proto and no others, ids
//      as lowercase hex, 64-bit numbers as decimal strings or integers, enums
//      as numbers);
//   2. each span becomes the SDK's ReadableSpan (@opentelemetry/api's
//      SpanKind, @opentelemetry/resources' Resource) and the batch is encoded
//      again by @opentelemetry/otlp-transformer's JsonTraceSerializer, which
//      must give the same request back (proto3 defaults aside), and by its
//      ProtobufTraceSerializer, which must accept it.
// What passes is answered 200 {} and written, one decoded span a line, to
// OUT/spans.jsonl; the raw bodies go to OUT/raw.jsonl, the x-test-token
// header to OUT/headers.jsonl; what fails is answered 400 and written to
// OUT/problems.jsonl.
//   node receiver.mjs OUT [--fail-first N] [--tls KEY CERT]   prints "port N"
//   once listening; --fail-first N answers the first N exports 503 (the
//   exporter retries); --tls serves HTTPS with that key and certificate.
import http from 'node:http';
import https from 'node:https';
import fs from 'node:fs';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';

const OUT = process.argv[2];
let failFirst = 0;
const i = process.argv.indexOf('--fail-first');
if (i > 0) failFirst = Number(process.argv[i + 1]);
const t = process.argv.indexOf('--tls');
const tls = t > 0 ? { key: fs.readFileSync(process.argv[t + 1]), cert: fs.readFileSync(process.argv[t + 2]) } : null;

const HEX32 = /^[0-9a-f]{32}$/, HEX16 = /^[0-9a-f]{16}$/, U64 = /^[0-9]{1,20}$/;

// The OTLP JSON mapping, checked field by field: unknown fields are problems
// (a misspelt field would be dropped silently by a receiver).
function only(obj, allowed, where, problems) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
    problems.push(`${where}: not an object`);
    return false;
  }
  for (const k of Object.keys(obj))
    if (!allowed.includes(k)) problems.push(`${where}: unknown field ${k}`);
  return true;
}
function int64(v) {
  return (typeof v === 'string' && /^-?[0-9]{1,19}$/.test(v)) || Number.isSafeInteger(v);
}
function checkValue(v, where, problems) {
  if (!only(v, ['stringValue', 'intValue', 'boolValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'], where, problems)) return;
  const keys = Object.keys(v);
  if (keys.length !== 1) return problems.push(`${where}: ${keys.length} value fields`);
  const [k] = keys;
  if (k === 'stringValue' && typeof v[k] !== 'string') problems.push(`${where}: stringValue not a string`);
  if (k === 'intValue' && !int64(v[k])) problems.push(`${where}: intValue not an int64`);
  if (k === 'boolValue' && typeof v[k] !== 'boolean') problems.push(`${where}: boolValue not a boolean`);
  if (k === 'arrayValue') (v[k].values || []).forEach((x, n) => checkValue(x, `${where}.values[${n}]`, problems));
}
function checkAttrs(attrs, where, problems) {
  if (attrs === undefined) return;
  if (!Array.isArray(attrs)) return problems.push(`${where}: not an array`);
  const seen = new Set();
  attrs.forEach((a, n) => {
    if (!only(a, ['key', 'value'], `${where}[${n}]`, problems)) return;
    if (typeof a.key !== 'string' || !a.key) problems.push(`${where}[${n}]: no key`);
    if (seen.has(a.key)) problems.push(`${where}[${n}]: ${a.key} twice`);
    seen.add(a.key);
    checkValue(a.value, `${where}[${n}].value`, problems);
  });
}
function check(req) {
  const problems = [];
  if (!only(req, ['resourceSpans'], 'request', problems)) return problems;
  if (!Array.isArray(req.resourceSpans) || !req.resourceSpans.length) problems.push('resourceSpans: empty');
  (req.resourceSpans || []).forEach((rs, r) => {
    const w = `resourceSpans[${r}]`;
    if (!only(rs, ['resource', 'scopeSpans', 'schemaUrl'], w, problems)) return;
    if (only(rs.resource, ['attributes', 'droppedAttributesCount', 'entityRefs'], `${w}.resource`, problems))
      checkAttrs(rs.resource.attributes, `${w}.resource.attributes`, problems);
    (rs.scopeSpans || []).forEach((ss, s) => {
      const ws = `${w}.scopeSpans[${s}]`;
      if (!only(ss, ['scope', 'spans', 'schemaUrl'], ws, problems)) return;
      only(ss.scope, ['name', 'version', 'attributes', 'droppedAttributesCount'], `${ws}.scope`, problems);
      (ss.spans || []).forEach((sp, n) => {
        const wp = `${ws}.spans[${n}]`;
        if (!only(sp, ['traceId', 'spanId', 'traceState', 'parentSpanId', 'flags', 'name', 'kind',
          'startTimeUnixNano', 'endTimeUnixNano', 'attributes', 'droppedAttributesCount', 'events',
          'droppedEventsCount', 'links', 'droppedLinksCount', 'status'], wp, problems)) return;
        if (!HEX32.test(sp.traceId) || /^0+$/.test(sp.traceId)) problems.push(`${wp}.traceId: ${sp.traceId}`);
        if (!HEX16.test(sp.spanId) || /^0+$/.test(sp.spanId)) problems.push(`${wp}.spanId: ${sp.spanId}`);
        if (sp.parentSpanId !== undefined && sp.parentSpanId !== '' && !HEX16.test(sp.parentSpanId))
          problems.push(`${wp}.parentSpanId: ${sp.parentSpanId}`);
        if (!Number.isInteger(sp.kind) || sp.kind < 0 || sp.kind > 5) problems.push(`${wp}.kind: ${sp.kind}`);
        if (sp.flags !== undefined && (!Number.isInteger(sp.flags) || sp.flags < 0 || sp.flags > 0xffffffff))
          problems.push(`${wp}.flags: ${sp.flags}`);
        if (typeof sp.name !== 'string' || !sp.name) problems.push(`${wp}.name`);
        for (const t of ['startTimeUnixNano', 'endTimeUnixNano'])
          if (!(typeof sp[t] === 'string' ? U64.test(sp[t]) : Number.isSafeInteger(sp[t]))) problems.push(`${wp}.${t}: ${sp[t]}`);
        if (BigInt(sp.endTimeUnixNano ?? 0) < BigInt(sp.startTimeUnixNano ?? 0)) problems.push(`${wp}: ends before it starts`);
        checkAttrs(sp.attributes, `${wp}.attributes`, problems);
        if (sp.status !== undefined && only(sp.status, ['code', 'message'], `${wp}.status`, problems) &&
            sp.status.code !== undefined && ![0, 1, 2].includes(sp.status.code))
          problems.push(`${wp}.status.code: ${sp.status.code}`);
      });
    });
  });
  return problems;
}

// OTLP JSON -> the SDK's ReadableSpan
function anyValue(v) {
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('boolValue' in v) return v.boolValue;
  if ('doubleValue' in v) return v.doubleValue;
  if ('arrayValue' in v) return (v.arrayValue.values || []).map(anyValue);
  return undefined;
}
function attrsOf(list) {
  const o = {};
  for (const a of list || []) o[a.key] = anyValue(a.value);
  return o;
}
function hrTime(nanos) {
  const n = BigInt(nanos);
  return [Number(n / 1000000000n), Number(n % 1000000000n)];
}
function decode(req) {
  const spans = [];
  for (const rs of req.resourceSpans) {
    const resource = resourceFromAttributes(attrsOf(rs.resource?.attributes));
    for (const ss of rs.scopeSpans || []) {
      const scope = { name: ss.scope?.name, version: ss.scope?.version };
      for (const sp of ss.spans || []) {
        const flags = sp.flags ?? 0;
        const ctx = { traceId: sp.traceId, spanId: sp.spanId, traceFlags: flags & 0xff };
        const parent = sp.parentSpanId
          ? { traceId: sp.traceId, spanId: sp.parentSpanId, traceFlags: flags & 0xff, isRemote: !!(flags & 0x200) }
          : undefined;
        const start = hrTime(sp.startTimeUnixNano), end = hrTime(sp.endTimeUnixNano);
        spans.push({
          name: sp.name,
          kind: sp.kind - 1, // OTLP's numbers are the API's plus one
          spanContext: () => ctx,
          parentSpanContext: parent,
          startTime: start,
          endTime: end,
          duration: hrTime(BigInt(sp.endTimeUnixNano) - BigInt(sp.startTimeUnixNano)),
          status: { code: sp.status?.code ?? SpanStatusCode.UNSET, message: sp.status?.message },
          attributes: attrsOf(sp.attributes),
          links: [],
          events: [],
          ended: true,
          resource,
          instrumentationScope: scope,
          droppedAttributesCount: sp.droppedAttributesCount ?? 0,
          droppedEventsCount: 0,
          droppedLinksCount: 0,
        });
      }
    }
  }
  return spans;
}

// proto3 JSON: an omitted field is its default (but a member of a oneof, as
// AnyValue's, is there whatever its value); 64-bit integers may be strings
const ONEOF = ['stringValue', 'intValue', 'boolValue', 'doubleValue', 'bytesValue'];
function canonical(x, key) {
  if (ONEOF.includes(key)) return key === 'intValue' ? String(x) : x;
  if (Array.isArray(x)) {
    const a = x.map((v) => canonical(v)).filter((v) => v !== undefined);
    return a.length ? a : undefined;
  }
  if (x !== null && typeof x === 'object') {
    const o = {};
    for (const k of Object.keys(x).sort()) {
      const v = canonical(x[k], k);
      if (v !== undefined) o[k] = v;
    }
    return Object.keys(o).length ? o : undefined;
  }
  if (x === 0 || x === '' || x === null || x === undefined || x === false) return undefined;
  if (key === 'intValue' || key.endsWith?.('UnixNano')) return String(x);
  return x;
}

const KIND = Object.fromEntries(Object.entries(SpanKind).filter(([, v]) => typeof v === 'number').map(([k, v]) => [v, k]));

function write(file, obj) {
  fs.appendFileSync(`${OUT}/${file}`, JSON.stringify(obj) + '\n');
}

const handler = (rq, rs) => {
  const chunks = [];
  rq.on('data', (c) => chunks.push(c));
  rq.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const answer = (status, obj, extra = {}) => {
      rs.writeHead(status, { 'Content-Type': 'application/json', ...extra });
      rs.end(JSON.stringify(obj));
    };
    if (rq.method !== 'POST' || rq.url !== '/v1/traces') return answer(404, { error: 'not here' });
    write('headers.jsonl', { token: rq.headers['x-test-token'] ?? null, ctype: rq.headers['content-type'], ua: rq.headers['user-agent'] });
    if (failFirst > 0) {
      failFirst--;
      write('refused.jsonl', { at: Date.now() });
      return answer(503, { error: 'try later' });
    }
    fs.appendFileSync(`${OUT}/raw.jsonl`, body.replace(/\n/g, ' ') + '\n');
    let req, problems;
    if (!/^application\/json\b/.test(rq.headers['content-type'] || '')) problems = [`content-type ${rq.headers['content-type']}`];
    else {
      try {
        req = JSON.parse(body);
        problems = check(req);
      } catch (e) {
        problems = [`not JSON: ${e.message}`];
      }
    }
    let spans = [];
    if (!problems.length) {
      try {
        spans = decode(req);
        const again = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(spans)));
        const a = JSON.stringify(canonical(req)), b = JSON.stringify(canonical(again));
        if (a !== b) problems.push(`the OTel serializer encodes the decoded spans differently:\n sent ${a}\n otel ${b}`);
        const pb = ProtobufTraceSerializer.serializeRequest(spans);
        if (!pb || !pb.length) problems.push('the protobuf serializer gave nothing');
      } catch (e) {
        problems.push(`decoding failed: ${e.stack}`);
      }
    }
    if (problems.length) {
      write('problems.jsonl', { problems });
      return answer(400, { error: problems.join('; ') });
    }
    for (const s of spans)
      write('spans.jsonl', {
        traceId: s.spanContext().traceId,
        spanId: s.spanContext().spanId,
        parentSpanId: s.parentSpanContext?.spanId ?? null,
        remote: s.parentSpanContext?.isRemote ?? null,
        sampled: (s.spanContext().traceFlags & 1) === 1,
        name: s.name,
        kind: KIND[s.kind],
        start: s.startTime,
        end: s.endTime,
        status: s.status.code === SpanStatusCode.ERROR ? 'ERROR' : s.status.code === SpanStatusCode.OK ? 'OK' : 'UNSET',
        statusMessage: s.status.message ?? null,
        attributes: s.attributes,
        resource: s.resource.attributes,
        scope: s.instrumentationScope,
      });
    answer(200, {});
  });
};
const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
server.listen(0, '127.0.0.1', () => console.log(`port ${server.address().port}`));
