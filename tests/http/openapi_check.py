#!/usr/bin/env python3
"""openapi_check.py OPENAPI.JSON RESPONSES.JSONL

Holds every recorded response (tests/http/record.sh: method, path, status,
content type, header names, body) to the OpenAPI document: the operation
for (method, path) exists (a path no route matches may only be answered 404,
a method the path lacks only 405 - both problems), the status is declared
(exactly, or as 4XX/5XX), the content type is one the response
declares, a JSON body validates against its schema (JSON Schema 2020-12,
python3-jsonschema), and traceparent and X-Request-Id are present. Prints
each mismatch; exit 1 when there is one."""
import json
import warnings
import re
import sys

warnings.simplefilter("ignore", DeprecationWarning)
from jsonschema import Draft202012Validator, RefResolver  # noqa: E402

doc = json.load(open(sys.argv[1]))
resolver = RefResolver.from_schema(doc)
problem = {"$ref": "#/components/schemas/Problem"}

routes = []
for path, item in doc["paths"].items():
    segs = path.strip("/").split("/")
    rx = "^/" + "/".join("[^/]+" if s.startswith("{") else re.escape(s) for s in segs) + "$"
    literal = sum(not s.startswith("{") for s in segs)
    routes.append((re.compile(rx), literal, path, item))
routes.sort(key=lambda r: -r[1])

errors, checked, ops = [], 0, set()


def validate(schema, value, where):
    v = Draft202012Validator(schema, resolver=resolver)
    errs = sorted(v.iter_errors(value), key=lambda e: list(e.path))
    for e in errs[:3]:
        errors.append(f"{where}: {'/'.join(map(str, e.path)) or '(body)'}: {e.message[:200]}")


for line in open(sys.argv[2]):
    rec = json.loads(line)
    m, p, st, ct = rec["method"], rec["path"], rec["status"], rec["ctype"].split(";")[0].lower()
    where = f"{m} {p} -> {st}"
    if st == 0:
        continue  # the connection was cut (the hostile tests): no response
    checked += 1
    hdrs = set(rec["headers"])
    for h in ("traceparent", "x-request-id"):
        if h not in hdrs:
            errors.append(f"{where}: no {h} header")
    match = next((r for r in routes if r[0].match(p)), None)
    op = match[3].get(m.lower()) if match else None
    if op is None:
        want = 404 if match is None else 405
        if st not in (want, 400, 414, 413) or ct != "application/problem+json":
            errors.append(f"{where}: no operation {m} {match[2] if match else p} and the answer is not a {want} problem")
        else:
            try:
                validate(problem, json.loads(rec["body"]), where)
            except ValueError:
                errors.append(f"{where}: the problem is not JSON")
        continue
    ops.add(f"{m} {match[2]}")
    rs = op["responses"]
    resp = rs.get(str(st)) or rs.get(f"{st // 100}XX") or rs.get("default")
    if resp is None:
        errors.append(f"{where}: status {st} is not declared")
        continue
    content = resp.get("content")
    if not content:
        if rec["body"].strip():
            errors.append(f"{where}: a body where the document declares none")
        continue
    if ct not in content:
        errors.append(f"{where}: content type {ct or '(none)'} is not one of {sorted(content)}")
        continue
    schema = content[ct].get("schema", {})
    if ct.endswith("json"):
        try:
            body = json.loads(rec["body"])
        except ValueError:
            errors.append(f"{where}: the body is not JSON")
            continue
        validate(schema, body, where)

for e in errors[:60]:
    print(e)
if len(errors) > 60:
    print(f"... {len(errors) - 60} more")
print(f"openapi: {checked} responses of {len(ops)} operations checked, {len(errors)} mismatches")
sys.exit(1 if errors else 0)
