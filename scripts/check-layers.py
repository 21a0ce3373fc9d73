#!/usr/bin/env python3
"""Layering check (run by check-style.sh): which folder of src/ may include
which. Dependencies point down (DESIGN.md section 4): a file may include the
headers of its own folder and of folders of a lower rank, and of a folder of
its own rank only where SAME_RANK names the pair. Entry points never include
a service's store queries (include/awooop/store/*.h): they call the service.
A public header belongs to the folder that implements it (OWNER)."""
import os
import re
import sys

RANK = {
    "core": 0,
    "store": 1, "bus": 1, "keys": 1, "otel": 1,  # adapters (otel: the trace exporter)
    "audit": 2,
    "tenancy": 3,
    "contract": 4, "run": 4, "keymig": 4,  # registry, run runtime, INV-1 engine
    "cache": 5, "outbox": 5,  # ADR-113 machinery
    "approval": 6, "budget": 6,
    "call": 7,  # what the agent-call doors share: the in-flight registry
    "provider": 8, "mcp": 8, "channel": 8,  # agent-facing services
    "agent": 9,  # the agent step: a loop over both doors (provider, mcp)
    "http": 10, "cli": 10,  # entry points
}
SAME_RANK = {
    ("keys", "bus"),  # the key wrapper's Redis connection
    ("keys", "store"),  # INV-1 phases live in the store
    ("cli", "http"),  # `serve` wires the HTTP server
}
ENTRY = {"http", "cli"}
OWNER = {  # public header (include/awooop/NAME.h) -> folder, where not NAME
    "redis": "bus", "kv": "keys", "envelope": "audit", "keyring": "contract",
    "fleet": "cache", "policy": "cache", "relay": "outbox", "llm": "provider", "redaction": "tenancy",
    "llm_wire": "provider", "mcp_wire": "mcp", "schedule": "run", "executor": "run",
    "worker": "run",
}
for h in ("alloc bounds buf clock cron crypto ctx egress err ident jcs json log metrics pattern "
          "redact schema secret str trace tz uuid wake").split():
    OWNER[h] = "core"

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
os.chdir(root)
where = {}  # bare header name -> folder that holds it
for d in os.listdir("src"):
    if os.path.isdir(os.path.join("src", d)):
        for f in os.listdir(os.path.join("src", d)):
            if f.endswith(".h"):
                where.setdefault(f, d)

bad = []
for d in sorted(os.listdir("src")):
    if not os.path.isdir(os.path.join("src", d)):
        continue
    if d not in RANK:
        bad.append(f"src/{d}/: a folder without a rank in scripts/check-layers.py")
        continue
    for f in sorted(os.listdir(os.path.join("src", d))):
        if not f.endswith((".c", ".h")):
            continue
        path = os.path.join("src", d, f)
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = m.group(1)
            if inc.startswith("awooop/store/"):
                to = "store"
                if d in ENTRY:
                    bad.append(f"{path}:{n}: {inc}: an entry point calls the service, "
                               "not its store queries")
                    continue
            elif inc.startswith("awooop/"):
                name = inc[len("awooop/"):-2]
                to = OWNER.get(name, name)
            elif inc.startswith("../"):
                to = inc.split("/")[1]
            elif os.path.exists(os.path.join("src", d, inc)):
                to = d
            else:
                to = where.get(os.path.basename(inc), d)
            if to == d:
                continue
            if to not in RANK:
                bad.append(f"{path}:{n}: {inc}: owner '{to}' unknown to scripts/check-layers.py")
            elif RANK[to] > RANK[d] or (RANK[to] == RANK[d] and (d, to) not in SAME_RANK):
                bad.append(f"{path}:{n}: {d}/ (rank {RANK[d]}) includes {inc} of {to}/ "
                           f"(rank {RANK[to]}): dependencies point down")
# aw_ means public: a function declared in a module's own header (src/**.h)
# does not take the prefix that names what other modules may call
public = set()
for dirpath, _, files in os.walk("include/awooop"):
    for f in files:
        if f.endswith(".h"):
            public |= set(re.findall(r"\b(aw_[a-z0-9_]+)\s*\(", open(os.path.join(dirpath, f)).read()))
for d in sorted(os.listdir("src")):
    if not os.path.isdir(os.path.join("src", d)):
        continue
    for f in sorted(os.listdir(os.path.join("src", d))):
        if f.endswith(".h"):
            path = os.path.join("src", d, f)
            for n, line in enumerate(open(path, encoding="utf-8"), 1):
                if line.lstrip().startswith(("*", "/*", "//", "#")):
                    continue
                for name in re.findall(r"\b(aw_[a-z0-9_]+)\s*\(", line):
                    if name not in public:
                        bad.append(f"{path}:{n}: {name}: a module's own function has no aw_ "
                                   "prefix (aw_ means public: include/awooop/)")
if bad:
    print("layering:")
    print("\n".join(bad))
    sys.exit(1)
