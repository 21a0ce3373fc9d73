#!/usr/bin/env python3
"""endpoint_agree.py DIR WORKERS: the convergence endpoint against the
benchmark's own measurement, per (worker, activation) pair.

The benchmark: the first time watcher w printed revision k (w<N>.changes,
ts_ns) minus k's commit (activations.log, the outbox row's created_at). The
endpoint (endpoint.json, saved while the watchers ran): took_ms of the
watcher's process (its id is in w<N>.stats) for revision k. Only the
activations the endpoint lists (its last 100) and revisions the watcher
itself served are compared (a watcher that skipped a revision never learned
it, in either view)."""
import json
import sys

d, workers = sys.argv[1], int(sys.argv[2])
ep = json.load(open(f"{d}/endpoint.json"))
commit = {}
for line in open(f"{d}/activations.log"):
    rev, c, _ = line.split()
    commit[rev] = int(c)
diffs, missing = [], 0
for w in range(workers):
    try:
        stats = json.loads(open(f"{d}/w{w}.stats").read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        continue
    pid = stats.get("process_id")
    seen = {}
    for line in open(f"{d}/w{w}.changes"):
        c = json.loads(line)
        seen.setdefault(c["revision_id"], c["ts_ns"])
    for a in ep["activations"]:
        rev = a["revision_id"]
        if rev not in commit or rev not in seen:
            continue
        mine = [p for p in a["processes"] if p["process_id"] == pid]
        if not mine:
            missing += 1
            continue
        bench_ms = (seen[rev] - commit[rev]) / 1e6
        diffs.append(abs(mine[0]["took_ms"] - bench_ms))
diffs.sort()
if not diffs:
    print("  endpoint vs bench: no pairs to compare")
else:
    q = lambda f: diffs[min(len(diffs) - 1, int(f * len(diffs)))]
    print(f"  endpoint vs bench: {len(diffs)} (worker, activation) pairs, |difference| "
          f"p50 {q(0.5):.2f} ms, p99 {q(0.99):.2f} ms, max {diffs[-1]:.2f} ms; "
          f"{missing} pairs the endpoint lacks")
