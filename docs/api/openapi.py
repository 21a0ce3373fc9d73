#!/usr/bin/env python3
"""Writes docs/api/openapi.json, the OpenAPI 3.1 document of awooop's HTTP API.

    python3 docs/api/openapi.py          # write it
    python3 docs/api/openapi.py --check  # exit 1 when the file is not what this writes

The document is the contract the tests hold the server to: the route table
and the document list the same operations (test_openapi), every response the
API tests receive validates against the schema of its status (lib.sh ->
tests/http/openapi_check.py), and redocly lints it. The server embeds the
file and answers it at GET /v1/openapi.json."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "openapi.json")
# every stable code, from the catalogue (docs/errors.md; test `core` holds it
# to the C table)
CODES = sorted({line.split("`")[1] for line in open(os.path.join(HERE, "..", "errors.md"))
                if line.startswith("| `E-")})

S = lambda **kw: {"type": "string", **kw}
I = lambda **kw: {"type": "integer", **kw}
B = {"type": "boolean"}
N = {"type": "number"}
TS = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$",
      "description": "RFC 3339 UTC with milliseconds"}
TSN = {"type": ["string", "null"], "pattern": TS["pattern"]}
UUID = {"type": "string", "format": "uuid", "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"}
UUIDN = {"type": ["string", "null"], "pattern": UUID["pattern"]}
QUEUE = r"^[A-Za-z0-9._-]{1,64}$"
# free-form: an object whose members the API does not fix (a step's args, a
# contract's body, usage, a ledger), and any JSON value (a run's input, a
# step's result). additionalProperties: true says so, so that generated
# clients type them as a map rather than an empty object.
FREE = {"type": "object", "additionalProperties": True}
JSONV = {"type": ["object", "array", "string", "number", "boolean", "null"], "additionalProperties": True,
         "description": "any JSON value"}
REF = lambda n: {"$ref": f"#/components/schemas/{n}"}


def obj(required, props, extra=True):
    o = {"type": "object", "required": list(required), "properties": props}
    if not extra:
        o["additionalProperties"] = False
    return o


schemas = {
    "Problem": obj(["type", "title", "status", "code", "request_id", "trace_id"], {
        "type": S(format="uri"), "title": S(), "status": I(minimum=400, maximum=599),
        "code": S(enum=CODES, description="stable code, docs/errors.md"),
        "request_id": S(), "trace_id": S(pattern="^[0-9a-f]{32}$"),
        "detail": S(), "pointer": S(description="the offending field (JSON Pointer or parameter)"),
        "error": obj(["message", "type", "code"], {"message": S(), "type": S(), "code": S(),
                                                   "param": {"type": ["string", "null"]}},
                     ) | {"description": "OpenAI's error object (the OpenAI-compatible routes), or "
                                         "Anthropic's (/v1/messages: type is Anthropic's error type)"}}),
    "Project": obj(["id", "created_at", "created_by"], {"id": S(), "created_at": TS, "created_by": S()}),
    "Key": obj(["key_id", "project", "name", "scope", "prefix", "created_at", "created_by", "revoked_at"], {
        "key_id": UUID, "project": S(), "name": S(), "prefix": S(),
        "scope": S(enum=["platform-admin", "project-admin", "operator", "worker", "reader"]),
        "created_at": TS, "created_by": S(), "revoked_at": TSN,
        "key": S(pattern="^awk_", description="the secret: only in the answer that creates it"),
        "limits": {"$ref": "#/components/schemas/KeyLimits"},
        "expires_at": TSN | {"description": "refused after this (E-AUTH-004); null: never"},
        "usage": obj(["minute", "requests", "tokens_reserved", "tokens_settled"], {
            "minute": S(description="the UTC minute counted (YYYY-MM-DDTHH:MM)"),
            "requests": I(), "tokens_reserved": I(), "tokens_settled": I(),
            "budget": obj(["period"], {"period": S(), "tokens_settled": I(), "tokens_reserved": I(),
                                       "cost_settled_usd": N, "cost_reserved_usd": N})})
        | {"description": "what the key's limits count now (GET of one key only)"}}),
    "KeyLimits": obj([], {
        "models": {"type": ["array", "null"], "maxItems": 16, "minItems": 1,
                   "items": S(pattern=r"^[A-Za-z0-9._:/@+-]{1,128}$"),
                   "description": "the routes or models the key may call (E-KEY-006); absent: any"},
        "rpm": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000000000,
                "description": "model calls per UTC minute (E-KEY-007)"},
        "tpm": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000000000,
                "description": "tokens per UTC minute, reserved at admission and settled after (E-KEY-008)"},
        "budget": {"type": ["object", "null"], "additionalProperties": False, "properties": {
            "tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000000000},
            "cost_usd": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 1000000},
            "period": S(enum=["day", "month", "total"])},
            "description": "the key's own budget, inside the project's (E-KEY-009)"},
        "expires_at": {"type": ["string", "null"], "description": "UTC, YYYY-MM-DDTHH:MM:SS[.mmm]Z (E-AUTH-004 after)"},
        "metadata": {"type": ["object", "null"], "additionalProperties": False, "properties": {
            "team": {"type": ["string", "null"], "pattern": r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$"},
            "user": {"type": ["string", "null"], "pattern": r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$"}},
            "description": "in every call's audit record (payload.key)"}},
        extra=False) | {"description": "a virtual key's limits (docs/guide/virtual-keys.md); null removes one in a PATCH"},
    "Revision": obj(["revision_id", "project", "family", "contract_id", "state", "body", "created_at",
                     "created_by", "updated_at"], {
        "revision_id": UUID, "project": S(), "family": S(), "contract_id": S(),
        "state": S(enum=["draft", "published", "active", "superseded", "revoked"]),
        "body": {**FREE, "description": "the contract body (its family's schema)"}, "created_at": TS,
        "created_by": S(), "updated_at": TS,
        "body_hash": {"type": ["string", "null"]}, "signature": {"type": ["string", "null"]},
        "key_id": {"type": ["string", "null"]}, "published_at": TSN,
        "published_by": {"type": ["string", "null"]}, "verified": B,
        "rollback_of": {**UUIDN, "description": "a rollback revision: the earlier revision whose body it restores"},
        "rollback_from": {**UUIDN, "description": "a rollback revision: the revision active when it was requested"}}),
    "Step": obj(["step", "kind", "state", "idempotency_key", "attempt", "result"], {
        "step": I(minimum=1), "kind": S(), "idempotency_key": S(), "attempt": I(minimum=0),
        "state": S(description="started, succeeded, skipped (its `when` did not hold; result null), failed, "
                               "waiting (for approval) or approved"),
        "tries": I(minimum=0, description="the step's finished executions (a started entry: before it); "
                                          "a step's `retry.attempts` counts these"),
        "result": JSONV, "error_code": {"type": ["string", "null"]}, "started_at": TSN, "finished_at": TSN,
        "calls": {"type": "array", "items": REF("StepCall"),
                  "description": "an agent step's sub-steps (its model and tool calls), in order"}}),
    "StepCall": obj(["seq", "kind", "name", "state", "turn", "started_at"], {
        "seq": I(minimum=1), "kind": S(enum=["model", "tool"]),
        "name": S(description="the route asked (model) or the federated tool name"),
        "state": S(enum=["started", "done", "parked", "approved", "failed"],
                   description="parked: the tool waits for an approval; approved: it has it"),
        "turn": I(minimum=1, description="the model call this call belongs to"),
        "tool_calls": {"type": "array", "items": S(), "description": "a model call's: the tools it asked for"},
        "error_code": {"type": ["string", "null"]}, "started_at": TSN, "finished_at": TSN}),
    "Run": obj(["run_id", "project", "state", "mode", "priority", "attempts", "max_attempts", "timeout_s",
                "trace_id", "workflow", "created_at"], {
        "run_id": UUID, "project": S(),
        "state": S(enum=["queued", "claimed", "running", "waiting_approval", "retry_wait", "succeeded",
                         "failed", "cancelled", "suggested"]),
        "mode": S(enum=["live", "shadow"]), "queue": S(pattern=QUEUE), "priority": I(), "attempts": I(minimum=0),
        "max_attempts": I(minimum=1), "timeout_s": I(minimum=1), "trace_id": S(),
        "workflow": {"type": "array", "items": FREE}, "input": JSONV, "error_code": {"type": ["string", "null"]},
        "created_at": TSN, "updated_at": TSN, "started_at": TSN, "finished_at": TSN, "run_after": TSN,
        "lease_owner": {"type": ["string", "null"]}, "lease_expires_at": TSN,
        "steps": {"type": "array", "items": REF("Step")},
        "transitions": {"type": "array", "items": FREE}}),
    "AuditEvent": obj(["event_id", "project", "seq", "ts", "actor", "action", "target", "trace_id",
                       "prev_hash", "hash", "payload"], {
        "event_id": UUID, "project": S(), "seq": I(minimum=1), "ts": TS, "actor": S(), "action": S(),
        "target": S(), "trace_id": S(), "prev_hash": S(), "hash": S(), "payload": JSONV}),
    "Claims": obj(["kid", "iss", "aud", "sub", "run_id", "action", "jti", "iat", "nbf", "exp"], {
        "kid": S(), "iss": S(), "aud": S(), "sub": S(), "run_id": UUID,
        "action": S(enum=["approve", "deny"]), "jti": S(), "iat": I(), "nbf": I(), "exp": I()}),
    "Convergence": obj(["family", "contract_id", "live", "stale", "processes", "activations"], {
        "family": S(), "contract_id": S(),
        "live": I(minimum=0, description="processes that reported within three of their intervals"),
        "stale": I(minimum=0, description="processes whose reports stopped (dropped)"),
        "processes": {"type": "array", "items": obj(
            ["role", "version", "started_at", "last_seen", "revision_id", "learned_at"], {
                "process_id": UUID, "role": S(), "version": S(), "started_at": TS, "last_seen": TS,
                "revision_id": UUIDN, "learned_at": TS})},
        "activations": {"type": "array", "description": "newest first", "items": obj(
            ["revision_id", "activated_at", "activated_by", "previous_revision_id", "learned", "of",
             "converged", "slowest_ms", "processes"], {
                "revision_id": UUID, "activated_at": TS, "activated_by": S(),
                "previous_revision_id": UUIDN, "learned": I(minimum=0), "of": I(minimum=0),
                "converged": B, "slowest_ms": {"type": ["integer", "null"]},
                "serving": I(minimum=0, description="live processes serving this revision now (0 once it is "
                             "revoked or replaced and they learned so), whatever they learned before"),
                "processes": {"type": "array", "items": obj(
                    ["learned_at", "took_ms", "started_after"], {
                        "process_id": UUID, "learned_at": TS,
                        "took_ms": I(description="learned_at minus the activation's commit"),
                        "started_after": B})}})}}),
    "JsonRpc": {"type": "object", "required": ["jsonrpc"], "properties": {
        "jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer", "null"]},
        "result": JSONV, "error": obj(["code", "message"], {"code": I(), "message": S(), "data": JSONV})}},
}

HDR = {
    "traceparent": {"description": "W3C trace context: the caller's trace continued, or a new one",
                    "schema": S(pattern="^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")},
    "X-Request-Id": {"description": "this request's id (also in logs and problems)", "schema": S()},
}
std_headers = {"traceparent": {"$ref": "#/components/headers/traceparent"},
               "X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}}


def js(schema, desc="OK", headers=True):
    r = {"description": desc, "content": {"application/json": {"schema": schema}}}
    if headers:
        r["headers"] = std_headers
    return r


PROBLEM = {"description": "an error: application/problem+json with a stable code (docs/errors.md)",
           "headers": std_headers,
           "content": {"application/problem+json": {"schema": REF("Problem")}}}
NOBODY = {"description": "no content", "headers": std_headers}

params = {
    "project": {"name": "project", "in": "path", "required": True, "schema": S(pattern="^([a-z0-9][a-z0-9_-]{1,62}|__platform__)$")},
    "family": {"name": "family", "in": "path", "required": True, "schema": S(enum=["policy_routing", "channel_event", "mcp_tool", "budget", "approval", "platform_resource"])},
    "contract": {"name": "contract", "in": "path", "required": True, "schema": S(pattern="^[a-z0-9][a-z0-9_.-]{0,62}$")},
    "rev": {"name": "rev", "in": "path", "required": True, "schema": UUID},
    "other": {"name": "other", "in": "path", "required": True, "schema": UUID},
    "run_id": {"name": "run_id", "in": "path", "required": True, "schema": UUID},
    "key_id": {"name": "key_id", "in": "path", "required": True, "schema": UUID},
    "bot": {"name": "bot", "in": "path", "required": True, "schema": S()},
    "action": {"name": "action", "in": "path", "required": True, "schema": S()},
    "queue": {"name": "queue", "in": "path", "required": True, "schema": S(pattern=QUEUE)},
    "schedule": {"name": "schedule", "in": "path", "required": True,
                 "schema": S(pattern="^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"), "description": "the schedule's name"},
    "file": {"name": "file", "in": "path", "required": True, "schema": S(pattern=r"^[a-z0-9_.-]+$")},
    "limit": {"name": "limit", "in": "query", "required": False, "schema": I(minimum=1, maximum=1000)},
    "cursor": {"name": "cursor", "in": "query", "required": False, "schema": S()},
    "IdempotencyKey": {"name": "Idempotency-Key", "in": "header", "required": False,
                       "description": "same key + same request within 24 h answers the original; another request 409 E-RUN-IDEMPOTENCY",
                       "schema": S(maxLength=255)},
    "runProject": {"name": "project", "in": "query", "required": False,
                   "description": "the project to act in: a platform admin's choice; another key may name only its "
                                  "own (another answers 404 like a missing one). Default: the key's project",
                   "schema": S(pattern="^([a-z0-9][a-z0-9_-]{1,62}|__platform__)$")},
    "traceparent": {"name": "traceparent", "in": "header", "required": False,
                    "description": "W3C trace context to continue", "schema": S()},
}
P = lambda n: {"$ref": f"#/components/parameters/{n}"}

paths = {}


def op(method, path, op_id, summary, tag, ok, scope, body=None, extra_params=(), extra=None, open_route=False,
       errors=None):
    names = [seg[1:-1] for seg in path.split("/") if seg.startswith("{")]
    prm = [P(n) for n in names] + [P(n) if isinstance(n, str) else n for n in extra_params] + [P("traceparent")]
    responses = dict(ok)
    responses["4XX"] = errors or PROBLEM
    responses["5XX"] = errors or PROBLEM
    o = {"operationId": op_id, "summary": summary, "tags": [tag], "parameters": prm,
         "responses": responses, "description": f"Scope: {scope}."}
    if open_route:
        o["security"] = []
    if body is not None:
        o["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    if extra:
        o.update(extra)
    paths.setdefault(path, {})[method.lower()] = o


items = lambda s, cursor=True: obj(["items"], {"items": {"type": "array", "items": s},
                                                **({"next_cursor": {"type": ["string", "null"]}} if cursor else {})})

# operations
op("GET", "/healthz", "healthz", "Liveness", "operations", {"200": js(obj(["status"], {"status": S(const="ok")}))}, "none", open_route=True)
op("GET", "/readyz", "readyz", "Readiness: store (and Redis) answer, schema current", "operations",
   {"200": js(obj(["status"], {"status": S(const="ready"), "store": S(), "redis": S()}))}, "none", open_route=True)
op("GET", "/metrics", "metrics", "Prometheus metrics (text exposition format)", "operations",
   {"200": {"description": "metrics", "headers": std_headers, "content": {"text/plain": {"schema": S()}}}}, "none", open_route=True)
op("GET", "/v1/openapi.json", "openapi", "This document", "operations",
   {"200": js(obj(["openapi", "paths"], {"openapi": S(), "paths": FREE}))}, "none", open_route=True)

op("POST", "/v1/projects", "createProject", "Create a project", "tenancy", {"201": js(REF("Project"), "created")},
   "platform-admin", body=obj(["id"], {"id": S()}, extra=False))
op("GET", "/v1/projects", "listProjects", "List projects (a project key sees its own)", "tenancy",
   {"200": js(items(REF("Project")))}, "any", extra_params=["limit", "cursor"])
op("GET", "/v1/whoami", "whoami", "The calling key: its project, scope and principal (never its secret)", "tenancy",
   {"200": js(obj(["project", "scope", "principal", "key_id"], {
       "project": S(description="the key's project (__platform__ for a platform-admin key)"),
       "scope": S(enum=["platform-admin", "project-admin", "operator", "worker", "reader"]),
       "principal": S(description="the key's name: who approvals, audit records and runs name"),
       "key_id": UUID}, extra=False))}, "any")
op("GET", "/v1/projects/{project}", "getProject", "A project", "tenancy", {"200": js(REF("Project"))}, "reader")
op("POST", "/v1/projects/{project}/keys", "createKey", "Create an API key (the secret is shown once)", "tenancy",
   {"201": js(REF("Key"), "created")}, "project-admin",
   body=obj(["name", "scope"], {"name": S(), "scope": S(), **schemas["KeyLimits"]["properties"]}, extra=False)
   | {"description": "name and scope, and a virtual key's limits beside them"})
op("GET", "/v1/projects/{project}/keys/{key_id}", "getKey", "A key, its limits and what they count now", "tenancy",
   {"200": js(REF("Key"))}, "project-admin")
op("PATCH", "/v1/projects/{project}/keys/{key_id}", "updateKey",
   "Change a key's limits (JSON merge patch; null removes a limit; audited key.update)", "tenancy",
   {"200": js(REF("Key"))}, "project-admin", body=REF("KeyLimits"))
op("GET", "/v1/projects/{project}/keys", "listKeys", "List keys (no secrets)", "tenancy",
   {"200": js(items(REF("Key"), cursor=False))}, "project-admin")
op("DELETE", "/v1/projects/{project}/keys/{key_id}", "revokeKey", "Revoke a key (at once)", "tenancy",
   {"204": NOBODY}, "project-admin")
AUDIT_QUERY = [
    {"name": "action", "in": "query", "schema": S(maxLength=512),
     "description": "up to 8 actions, comma-separated (llm.call,mcp.call,mcp.relay: every agent call)"},
    {"name": "since", "in": "query", "schema": S(), "description": "records at or after this time (RFC 3339)"},
    {"name": "until", "in": "query", "schema": S(), "description": "records before this time (RFC 3339)"},
    {"name": "actor", "in": "query", "schema": S(maxLength=63), "description": "the principal (a key's name)"},
    {"name": "target", "in": "query", "schema": S(maxLength=1024),
     "description": "the record's target: a run id, an LLM route, an MCP tool or method"},
    {"name": "outcome", "in": "query", "schema": S(maxLength=32),
     "description": "an agent call's outcome (ok, refused, failed, cancelled, ...), from its envelope; "
                    "!X: every outcome but X (!ok: the calls that did not succeed)"},
    {"name": "run", "in": "query", "schema": UUID, "description": "agent calls made by this run's steps"},
    {"name": "order", "in": "query", "schema": S(enum=["asc", "desc"], default="asc"),
     "description": "desc: newest first, the cursor counting down"}]
op("GET", "/v1/projects/{project}/audit", "listAudit", "The audit trail, oldest first (or newest first), filtered",
   "audit", {"200": js(items(REF("AuditEvent")))}, "operator", extra_params=["limit", "cursor"] + AUDIT_QUERY)

op("GET", "/v1/projects/{project}/audit/verify", "verifyAudit", "Walk the project's whole audit chain", "audit",
   {"200": js(obj(["project", "ok", "records", "break_seq", "reason"], {
       "project": S(), "ok": B, "records": I(minimum=0),
       "break_seq": I(minimum=0, description="the first bad record (0 when intact)"), "reason": S()}))}, "operator")
op("GET", "/v1/projects/{project}/key-migrations", "keyMigrations",
   "INV-1 Redis key migration: the phase of every tenant key pattern and the counters that gate the next one",
   "operations", {"200": js(obj(["project", "redis", "items"], {
       "project": S(), "redis": {"type": "boolean", "description": "false: no Redis, phases from the store, no counters"},
       "items": {"type": "array", "items": obj(["pattern", "priority", "phase", "legacy", "since", "counters"], {
           "pattern": S(), "priority": S(), "phase": S(enum=["none", "A", "B", "C", "done"]), "legacy": S(),
           "since": {"type": ["string", "null"]},
           "counters": {"type": ["object", "null"], "description": "this process's reads since the phase began",
                        "properties": {"reads": I(), "new_hits": I(), "fallbacks": I(), "old_reads": I()}}})}}))},
   "operator")
REDACTION_LIST = {"type": "array", "maxItems": 16, "items": obj(["name", "pattern"], {
    "name": S(pattern="^[a-z][a-z0-9_]{0,31}$", description="the marker is [REDACTED:custom:<name>]"),
    "pattern": S(minLength=1, maxLength=200, description="PCRE2 (UTF); no back references, callouts or \\K; "
                 "may not match the empty string")}, extra=False)}
REDACTIONDOC = obj(["project", "version", "patterns", "updated_at", "updated_by"], {
    "project": S(), "version": I(minimum=0, description="grows by one at each change; 0: never set"),
    "patterns": REDACTION_LIST, "updated_at": TSN, "updated_by": {"type": ["string", "null"]}}, extra=False)
op("GET", "/v1/projects/{project}/redaction-patterns", "getRedactionPatterns",
   "The project's custom redaction patterns (set by the platform)", "tenancy", {"200": js(REDACTIONDOC)}, "operator")
op("PUT", "/v1/projects/{project}/redaction-patterns", "putRedactionPatterns",
   "Replace the project's custom redaction patterns ([] clears them); audited; in force in every process within "
   "--redaction-poll-ms. A list refused is 400 E-REDACT-001 with the entry's pointer, nothing changed", "tenancy",
   {"200": js(REDACTIONDOC)}, "platform-admin (a tenant's key of any scope: 403)",
   body=obj(["patterns"], {"patterns": REDACTION_LIST}, extra=False))
CONSOLE = {"description": "a file of the console (HTML, JavaScript, CSS), built into the binary; served with a strict "
                          "Content-Security-Policy",
           "headers": std_headers | {"Content-Security-Policy": {"schema": S()}},
           "content": {"text/html": {"schema": S()}, "text/javascript": {"schema": S()}, "text/css": {"schema": S()}}}
op("GET", "/", "root", "Redirects to the web console", "console",
   {"302": {"description": "to /console/", "headers": std_headers | {"Location": {"schema": S(const="/console/")}}}},
   "none", open_route=True)
op("GET", "/console", "console", "The web console", "console", {"200": CONSOLE}, "none (the console asks for a key)",
   open_route=True)
op("GET", "/console/{file}", "consoleFile", "A file of the web console", "console", {"200": CONSOLE}, "none",
   open_route=True)

C = "/v1/projects/{project}/contracts/{family}/{contract}"
op("POST", C + "/revisions", "createRevision", "New draft revision", "contracts", {"201": js(REF("Revision"), "created")},
   "operator", body=obj(["body"], {"body": FREE}, extra=False))
op("GET", C + "/revisions", "listRevisions", "Revisions of a contract", "contracts",
   {"200": js(items(REF("Revision"), cursor=False))}, "reader")
op("GET", C + "/revisions/{rev}", "getRevision", "A revision (signature verified)", "contracts",
   {"200": js(REF("Revision"))}, "reader")
op("PUT", C + "/revisions/{rev}", "updateRevision", "Replace a draft's body", "contracts",
   {"200": js(REF("Revision"))}, "operator", body=obj(["body"], {"body": FREE}, extra=False))
op("GET", C + "/revisions/{rev}/diff/{other}", "diffRevisions", "RFC 6902 JSON Patch from rev to other", "contracts",
   {"200": js({"type": "array", "items": obj(["op", "path"], {"op": S(), "path": S()})})}, "reader")
op("POST", C + "/revisions/{rev}/{action}", "revisionAction",
   "publish (hash + sign), approve, activate (ADR-113) or revoke a revision", "contracts",
   {"200": js({"anyOf": [REF("Revision"),
                         obj(["revision_id", "activated", "approvals", "threshold"], {
                             "revision_id": UUID, "activated": B, "suggested": B, "approvals": I(), "threshold": I(),
                             "old_revision_id": UUIDN, "event_id": UUIDN}),
                         obj(["revision_id", "state"], {"revision_id": UUID, "state": S(const="revoked")})]},
              "publish: the revision; activate: the outcome; revoke: the new state"),
    "201": js(obj(["revision_id", "principal", "approved_at", "expires_at"], {
        "revision_id": UUID, "principal": S(), "approved_at": TS, "expires_at": TS,
        "rollback": {"const": True, "description": "present for a rollback revision, with what follows"},
        "approvals": I(), "approvals_needed": I(),
        "activated": {"type": "boolean", "description": "this approval completed the rollback quorum and activated it"},
        "old_revision_id": UUIDN, "event_id": UUIDN,
        "activation_error": obj(["code", "detail"], {"code": S(enum=CODES), "detail": S()})}),
        "approve: the approval (a rollback's: and whether it activated)"),
    "202": js(obj(["revision_id", "activated", "approvals", "threshold"], {
        "revision_id": UUID, "activated": {"const": False}, "suggested": B, "approvals": I(), "threshold": I()}),
        "activate in suggest mode below the threshold: nothing changed")},
   "operator (revoke: project-admin)")
op("POST", C + "/rollback", "rollbackContract",
   "Roll back in one step: a published revision restoring an earlier active revision's body, activated by the "
   "approval that completes the approval policy's rollback quorum", "contracts",
   {"201": js({"allOf": [REF("Revision"), obj(
       ["rollback_of", "approvals", "approvals_needed"], {
           "rollback_of": UUID, "approvals": I(const=0),
           "approvals_needed": I(minimum=1, description="valid approvals its activation needs: the policy's "
                                                         "rollback_threshold, else threshold")})]},
              "the rollback revision, published")},
   "operator", extra={"requestBody": {"required": False, "content": {"application/json": {"schema": obj([], {
       "to": {**UUID, "description": "the earlier (superseded) revision to restore; default: the one active "
                                     "before the current activation"}}, extra=False)}}}})
op("GET", C + "/active", "activeRevision", "The active revision, hash and signature verified", "contracts",
   {"200": js(REF("Revision"))}, "reader")
op("GET", C + "/convergence", "contractConvergence",
   "Which live processes serve each recent activation, and how long after its commit", "contracts",
   {"200": js(REF("Convergence"))}, "reader",
   extra_params=[{"name": "limit", "in": "query", "schema": I(minimum=1, maximum=100, default=10)}])

REFOBJ = {"description": "a reference: replaced, when the step executes, by the value at this JSON pointer "
                         "(RFC 6901) into {\"input\": ..., \"steps\": {\"<name>\": {\"state\", \"result\"}}} - "
                         "/input... or /steps/<an earlier step's name>/result... (or /state)",
          **obj(["$ref"], {"$ref": S(pattern="^/(input|steps/[A-Za-z0-9][A-Za-z0-9._-]{0,62})(/.*)?$",
                                     maxLength=1024)}, extra=False)}
STEP = obj(["kind"], {
    "kind": S(), "args": {**FREE, "description": "the kind's arguments; any value inside may be a "
                                                   "reference {\"$ref\": POINTER} (see `when`)"},
    "name": S(pattern="^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$", description="unique in the workflow; later steps refer "
                                                                       "to its result as /steps/<name>/result"),
    "when": {"description": "run the step only when the referenced value matches; else it is journaled skipped "
                            "(result null) and the run goes on. An absent path equals nothing and does not exist",
             "oneOf": [obj(["$ref", "equals"], {"$ref": REFOBJ["properties"]["$ref"], "equals": JSONV}, extra=False),
                       obj(["$ref", "not_equals"], {"$ref": REFOBJ["properties"]["$ref"], "not_equals": JSONV},
                           extra=False),
                       obj(["$ref", "exists"], {"$ref": REFOBJ["properties"]["$ref"], "exists": B}, extra=False)]},
    "retry": {"description": "the step's own retry policy, overriding the run's max_attempts and the worker's "
                             "backoff; codes that are permanent by nature (docs/internals/runtime.md) are never "
                             "retried whatever it says",
              **obj([], {"attempts": I(minimum=1, maximum=100), "backoff_ms": I(minimum=0, maximum=3600000),
                         "max_backoff_ms": I(minimum=0, maximum=3600000),
                         "permanent": {"type": "array", "maxItems": 32, "items": S(pattern="^E-"),
                                       "description": "further codes this step never retries"}}, extra=False)}},
    extra=False)
RUNREQ = obj(["workflow"], {"workflow": {"type": "array", "minItems": 1, "maxItems": 100, "items": STEP},
                            "input": JSONV, "mode": S(enum=["live", "shadow"]), "priority": I(),
                            "max_attempts": I(), "timeout_s": I(), "idempotency_key": S(),
                            "run_at": {**TS, "description": "not before this time (within a year); a past time runs now"},
                            "queue": {**S(pattern=QUEUE), "description": "a declared queue of the project (default: default)"}})
op("POST", "/v1/platform/runs", "submitRun", "Submit a run in the key's project", "runs",
   {"201": js(REF("Run"), "created"), "200": js(REF("Run"), "replayed (same Idempotency-Key, same request)")},
   "operator", body=RUNREQ, extra_params=["runProject", "IdempotencyKey"])
op("GET", "/v1/platform/runs", "listRuns", "Runs, newest first", "runs", {"200": js(items(REF("Run")))}, "reader",
   extra_params=["runProject", "limit", "cursor", {"name": "state", "in": "query", "schema": S()},
                 {"name": "queue", "in": "query", "schema": S(), "description": "runs of this queue"},
                 {"name": "created_from", "in": "query", "schema": S(),
                  "description": "runs created at or after this time (UTC, milliseconds: 2026-11-29T09:54:27.000Z)"},
                 {"name": "created_to", "in": "query", "schema": S(),
                  "description": "runs created before this time (UTC, milliseconds)"},
                 {"name": "q", "in": "query", "schema": S(),
                  "description": "1..200 bytes: the beginning of a run id, or a part of a step's kind or name (any case)"}])
op("POST", "/v1/platform/runs:batch", "submitRuns", "Submit up to 1,000 runs in one transaction", "runs",
   {"200": js(obj(["results", "created", "replayed", "refused"], {
       "results": {"type": "array", "items": obj(["status"], {"status": I(), "run_id": UUID, "code": S(), "detail": S(), "pointer": S()})},
       "created": I(), "replayed": I(), "refused": I()}))}, "operator",
   body=obj(["runs"], {"runs": {"type": "array", "minItems": 1, "maxItems": 1000, "items": RUNREQ}}),
   extra_params=["runProject"])
op("GET", "/v1/platform/runs/{run_id}", "getRun", "A run with its journal and transitions", "runs",
   {"200": js(REF("Run"))}, "reader", extra_params=["runProject"])
op("POST", "/v1/platform/runs/{run_id}/cancel", "cancelRun", "Cancel a run", "runs", {"200": js(REF("Run"))}, "operator",
   extra_params=["runProject"])
op("GET", "/v1/platform/runs/{run_id}/diff/{other}", "diffRuns", "Step-by-step comparison of two runs", "runs",
   {"200": js(obj(["a", "b", "same"], {"a": UUID, "b": UUID, "same": B, "steps": {"type": "array"}}))}, "reader",
   extra_params=["runProject"])
op("POST", "/v1/platform/runs/{run_id}/approve", "decideRun",
   "Approve or deny a waiting run: an approver's token, or the key's own decision",
   "approvals", {"200": js(obj(["run_id", "state", "moved"], {
       "run_id": UUID, "state": S(), "approvals": I(), "threshold": I(), "moved": B, "decisions": {"type": "array"}}))},
   "none with a token (its minter's own decision); the approver's key with a decision",
   body=obj([], {"token": S(), "decision": S(enum=["approve", "deny"])}, extra=False), open_route=True,
   extra_params=["runProject"])
op("POST", "/v1/platform/approval-tokens", "mintApprovalToken", "Mint an HS256 token carrying the key's own decision",
   "approvals",
   {"201": js(obj(["token", "claims"], {"token": S(), "claims": REF("Claims")}), "created")}, "reader",
   body=obj(["run_id", "action"], {"run_id": UUID, "sub": S(description="the key's own principal (no other)"),
                                   "action": S(enum=["approve", "deny"]), "ttl_s": I()}))
op("POST", "/v1/platform/approval-tokens:verify", "verifyApprovalToken", "Verify a token (nothing used up)", "approvals",
   {"200": js(obj(["valid", "claims"], {"valid": {"const": True}, "claims": REF("Claims")}))}, "reader",
   body=obj(["token"], {"token": S()}, extra=False))

op("POST", "/v1/chat/completions", "chatCompletions", "OpenAI chat completion through the LLM gateway", "llm",
   {"200": {"description": "a chat completion, or an SSE stream when stream is true",
            "headers": std_headers | {
                "x-awooop-route": {"description": "the policy's route that served the call", "schema": S()},
                "x-awooop-upstream-model": {"description": "the upstream model that answered", "schema": S()}},
            "content": {"application/json": {"schema": obj(["choices"], {"id": S(), "object": S(), "model": S(),
                                                                         "choices": {"type": "array"}, "usage": FREE})},
                        "text/event-stream": {"schema": S()}}}}, "worker",
   body=obj(["messages"], {"model": S(), "messages": {"type": "array"}, "stream": B}))
op("POST", "/v1/messages", "createMessage",
   "Anthropic Messages API through the LLM gateway (same routing, budget and audit as chat completions)", "llm",
   {"200": {"description": "a message, or the Messages API's named SSE events when stream is true; errors carry "
                           "Anthropic's error object (type, message) with the stable code inside",
            "headers": std_headers | {
                "x-awooop-route": {"description": "the policy's route that served the call", "schema": S()},
                "x-awooop-upstream-model": {"description": "the upstream model that answered", "schema": S()}},
            "content": {"application/json": {"schema": obj(["id", "type", "role", "content", "stop_reason", "usage"], {
                "id": S(), "type": S(const="message"), "role": S(const="assistant"), "model": S(),
                "content": {"type": "array"}, "stop_reason": S(), "stop_sequence": {"type": ["string", "null"]},
                "usage": FREE})},
                        "text/event-stream": {"schema": S()}}}}, "worker (Authorization: Bearer, or x-api-key)",
   body=obj(["model", "max_tokens", "messages"], {"model": S(), "max_tokens": I(minimum=1),
                                                  "messages": {"type": "array"}, "system": JSONV, "stream": B}))
op("POST", "/v1/responses", "createResponse",
   "OpenAI Responses API through the LLM gateway (same routing, budget and audit as chat completions; "
   "nothing stored)", "llm",
   {"200": {"description": "a response, or the Responses API's SSE events when stream is true",
            "headers": std_headers | {
                "x-awooop-route": {"description": "the policy's route that served the call", "schema": S()},
                "x-awooop-upstream-model": {"description": "the upstream model that answered", "schema": S()}},
            "content": {"application/json": {"schema": obj(["id", "object", "status", "output"], {
                "id": S(), "object": S(const="response"), "status": S(), "model": S(),
                "output": {"type": "array"}, "usage": FREE})},
                        "text/event-stream": {"schema": S()}}}}, "worker",
   body=obj(["model", "input"], {"model": S(), "input": JSONV, "instructions": S(), "tools": {"type": "array"},
                                 "max_output_tokens": I(minimum=0), "stream": B, "store": B}))
op("POST", "/v1/embeddings", "createEmbeddings",
   "OpenAI embeddings through the LLM gateway (OpenAI-compatible and Azure upstreams; budgeted by the input)", "llm",
   {"200": {"description": "an embeddings list", "headers": std_headers | {
       "x-awooop-route": {"description": "the policy's route that served the call", "schema": S()},
       "x-awooop-upstream-model": {"description": "the upstream model that answered", "schema": S()}},
            "content": {"application/json": {"schema": obj(["object", "data", "usage"], {
                "object": S(const="list"), "data": {"type": "array"}, "model": S(), "usage": FREE})}}}}, "worker",
   body=obj(["model", "input"], {"model": S(), "input": JSONV, "encoding_format": S(enum=["float", "base64"]),
                                 "dimensions": I(minimum=1), "user": S()}, extra=False))
op("GET", "/v1/models", "listModels", "Route names and models of the project's active policy", "llm",
   {"200": js(obj(["object", "data"], {"object": S(const="list"), "data": {"type": "array", "items": obj(["id"], {"id": S()})}}))}, "worker")

MCP = "/v1/projects/{project}/mcp"
RPCERR = {"description": "a JSON-RPC error: the MCP endpoint never answers problem+json; data.code is the stable "
                         "code (gate refusals E-MCP-GATE-001..009)",
          "headers": std_headers, "content": {"application/json": {"schema": REF("JsonRpc")}}}
op("POST", MCP, "mcpPost", "MCP Streamable HTTP: JSON-RPC to the project's tools (five gates)", "mcp",
   {"200": {"description": "a JSON-RPC response (errors are JSON-RPC errors with data.code), or an SSE stream",
            "headers": std_headers,
            "content": {"application/json": {"schema": REF("JsonRpc")}, "text/event-stream": {"schema": S()}}},
    "202": {"description": "a notification or response accepted", "headers": std_headers}},
   "worker", body={"type": ["object", "array"], "additionalProperties": True}, open_route=True, errors=RPCERR,
   extra_params=[{"name": "Mcp-Session-Id", "in": "header", "schema": S()},
                 {"name": "MCP-Protocol-Version", "in": "header", "schema": S()}])
op("GET", MCP, "mcpGet",
   "A legacy session's own event stream: notifications/resources/updated for its subscriptions", "mcp",
   {"200": {"description": "the session's event stream (one a session: a newer one ends the older; "
                           "it ends with the session)", "headers": std_headers,
            "content": {"text/event-stream": {"schema": S()}}},
    "405": RPCERR | {"description": "no Mcp-Session-Id, or an Accept without text/event-stream "
                                    "(a JSON-RPC error)"}}, "worker",
   open_route=True, errors=RPCERR,
   extra_params=[{"name": "Mcp-Session-Id", "in": "header", "schema": S()},
                 {"name": "Accept", "in": "header", "schema": S()}])
op("DELETE", MCP, "mcpDelete", "End a legacy MCP session", "mcp", {"204": NOBODY}, "worker", open_route=True,
   errors=RPCERR,
   extra_params=[{"name": "Mcp-Session-Id", "in": "header", "schema": S()}])

op("POST", "/v1/projects/{project}/channels/{bot}/messages", "sendChannelMessage", "Queue a message for the channel hub",
   "channels", {"202": js(obj(["msg_id", "state"], {"msg_id": UUID, "state": S(const="pending")}), "queued")},
   "operator", body=obj(["chat_id", "text"], {"chat_id": {"type": ["string", "integer"]}, "text": S(), "fingerprint": S()}))
op("POST", "/v1/channels/telegram/{project}/{bot}", "telegramWebhook", "Telegram webhook: one update", "channels",
   {"200": js(obj(["ok"], {"ok": {"const": True}}))}, "none (X-Telegram-Bot-Api-Secret-Token)",
   body=FREE, open_route=True,
   extra_params=[{"name": "X-Telegram-Bot-Api-Secret-Token", "in": "header", "required": True, "schema": S()}])

QUEUEDOC = obj(["name", "concurrency", "queued", "running"], {
    "name": S(pattern=QUEUE), "concurrency": {"type": ["integer", "null"], "minimum": 1, "maximum": 100000},
    "queued": I(minimum=0), "running": I(minimum=0), "updated_at": TS, "updated_by": S()})
op("GET", "/v1/projects/{project}/queues", "listQueues", "The project's run queues: limit, runs queued and in flight",
   "runs", {"200": js(items(QUEUEDOC, cursor=False))}, "reader")
op("PUT", "/v1/projects/{project}/queues/{queue}", "putQueue",
   "Declare a run queue or change its concurrency limit (null: none); at most 100 a project", "runs",
   {"200": js(QUEUEDOC)}, "operator",
   body=obj(["concurrency"], {"concurrency": {"type": ["integer", "null"], "minimum": 1, "maximum": 100000}}, extra=False))

SCHEDNAME = S(pattern="^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
CRON = S(maxLength=256, description="5 fields: minute hour day-of-month month day-of-week; lists, ranges, "
                                    "steps, JAN..DEC, SUN..SAT; or @yearly @monthly @weekly @daily @hourly "
                                    "(docs/schedules.md). A bad one: 422 E-CRON-001 at /cron")
ZONE = S(maxLength=64, description="an IANA time zone of the server's zone database (default UTC); an unknown "
                                   "one: 422 E-CRON-002 at /timezone")
CATCHUP = S(enum=["skip", "once"], description="after downtime: skip (only ticks within 60 s of now fire) or "
                                               "once (one catch-up run for the ticks missed, then on); default skip")
SCHEDULEDOC = obj(["schedule_id", "project", "name", "cron", "timezone", "catch_up", "run", "next_fire_at",
                   "last_fire_at", "last_run_id", "last_error", "created_at", "created_by", "updated_at"], {
    "schedule_id": UUID, "project": S(), "name": SCHEDNAME, "cron": S(), "timezone": S(), "catch_up": CATCHUP,
    "run": {**FREE, "description": "the run request each tick submits"},
    "next_fire_at": {**TSN, "description": "the next tick (null: it never fires again)"},
    "last_fire_at": {**TSN, "description": "the tick of its last run"}, "last_run_id": UUIDN,
    "last_error": {"type": ["string", "null"], "description": "the code of the last tick that could not "
                                                            "start its run (cleared by the next that does)"},
    "created_at": TS, "created_by": S(), "updated_at": TS,
    "fires": {"type": "array", "description": "the newest ticks fired (20, newest first; GET of one schedule)",
              "items": obj(["tick", "run_id", "catch_up", "missed", "fired_at"], {
                  "tick": TS, "run_id": UUID, "catch_up": B,
                  "missed": I(minimum=0, description="a catch-up run: the ticks it stands for"),
                  "fired_at": TS})}})
op("POST", "/v1/projects/{project}/schedules", "createSchedule",
   "Start a run template on a cron schedule in a time zone; each tick starts one run across every worker "
   "process (idempotency key schedule:<id>:<tick>); audited; at most 100 a project", "runs",
   {"201": js(SCHEDULEDOC, "created")}, "operator",
   body=obj(["name", "cron", "run"], {"name": SCHEDNAME, "cron": CRON, "timezone": ZONE, "catch_up": CATCHUP,
                                      "run": {**RUNREQ, "description": "a run request (no run_at): its "
                                                                       "errors' pointers are under /run"}},
            extra=False))
op("GET", "/v1/projects/{project}/schedules", "listSchedules", "The project's schedules by name", "runs",
   {"200": js(items(SCHEDULEDOC, cursor=False))}, "reader")
op("GET", "/v1/projects/{project}/schedules/{schedule}", "getSchedule",
   "A schedule with the newest ticks it fired", "runs", {"200": js(SCHEDULEDOC)}, "reader")
op("DELETE", "/v1/projects/{project}/schedules/{schedule}", "deleteSchedule",
   "Delete a schedule (its runs stay); audited", "runs", {"204": NOBODY}, "operator")

op("GET", "/v1/projects/{project}/budget", "getBudget", "Spend against the limits of the current period", "budget",
   {"200": js(obj(["project", "budget", "period", "suspended"], {
       "project": S(), "budget": B, "period": S(), "period_kind": S(), "resets": S(), "suspended": B, "reason": S(),
       "limit": I(), "reserved": I(), "settled": I(), "ledger": FREE, "models": {"type": "array"}}))},
   "reader", extra_params=[{"name": "run", "in": "query", "schema": UUID}])
op("GET", "/v1/projects/{project}/budget/ledger", "budgetLedger", "Ledger entries", "budget",
   {"200": js(obj(["entries"], {"entries": {"type": "array"}, "next": {"type": ["integer", "null"]}}))}, "reader",
   extra_params=["limit", {"name": "after", "in": "query", "schema": I(minimum=0)},
                 {"name": "run", "in": "query", "schema": UUID}])
SPENDROW = obj(["at", "calls", "failed", "tokens_in", "tokens_out", "tokens", "cost_usd"], {
    "at": TS, "model": S(), "key": S(), "calls": I(), "failed": I(), "tokens_in": I(), "tokens_out": I(),
    "tokens": I(), "cost_usd": {"type": "number"}})
op("GET", "/v1/projects/{project}/budget/spend", "budgetSpend",
   "Spend over time per hour or day, per model or per key (from the model calls' audit records)", "budget",
   {"200": js(obj(["bucket", "by", "since", "until", "items", "totals", "truncated"], {
       "bucket": S(enum=["hour", "day"]), "by": S(enum=["model", "key", "none"]), "since": TS, "until": TS,
       "items": {"type": "array", "items": SPENDROW}, "totals": FREE, "truncated": B}))}, "reader",
   extra_params=[{"name": "bucket", "in": "query", "schema": S(enum=["hour", "day"])},
                 {"name": "by", "in": "query", "schema": S(enum=["model", "key", "none"])},
                 {"name": "since", "in": "query", "schema": S(), "description": "from this time (UTC, milliseconds: 2026-11-29T09:54:27.000Z), "
                  "down to its bucket's start; default: the 48 hours (hour) or 30 days (day) up to until's, included"},
                 {"name": "until", "in": "query", "schema": S(), "description": "before this time (UTC, milliseconds); default now"},
                 {"name": "limit", "in": "query", "schema": I(minimum=1, maximum=5000),
                  "description": "at most this many rows (default 2000)"}])
op("POST", "/v1/projects/{project}/budget/{action}", "budgetAction", "suspend or resume the project's model calls",
   "budget", {"200": js(FREE)}, "project-admin", body=FREE)

doc = {
    "openapi": "3.1.0",
    "info": {"title": "awooop", "version": "0.1.0",
             "description": "The control plane for AI agent operations: tenancy, contracts and their activation "
                            "(ADR-113), runs, approvals, the LLM and MCP gateways, budgets, channels. Errors are "
                            "application/problem+json with a stable code (docs/errors.md); every response carries "
                            "traceparent and X-Request-Id.",
             "license": {"name": "Proprietary", "identifier": "LicenseRef-awooop"}},
    "servers": [{"url": "http://127.0.0.1:8080", "description": "the embedded shape's default"}],
    "security": [{"apiKey": []}],
    "tags": [{"name": t, "description": d} for t, d in [
        ("operations", "health, readiness, metrics, this document"), ("tenancy", "projects and API keys"),
        ("audit", "the hash-chained audit trail"), ("contracts", "revisions, approvals, activation, convergence"),
        ("runs", "durable runs"), ("approvals", "approval tokens and decisions"), ("llm", "the LLM gateway"),
        ("mcp", "the MCP gateway"), ("channels", "the channel hub"), ("budget", "the token budget ledger"),
        ("console", "the web console's files")]],
    "paths": paths,
    "components": {"schemas": schemas, "parameters": params, "headers": HDR,
                   "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer", "bearerFormat": "awk_...",
                                                  "description": "an API key; it decides the project"}}},
}

text = json.dumps(doc, indent=1, sort_keys=False) + "\n"
if len(sys.argv) > 1 and sys.argv[1] == "--check":
    cur = open(OUT).read() if os.path.exists(OUT) else ""
    if cur != text:
        print("docs/api/openapi.json is not what docs/api/openapi.py writes: run it", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
open(OUT, "w").write(text)
print(f"wrote {OUT}: {sum(len(v) for v in paths.values())} operations")
