#!/usr/bin/env python3
"""The CTest labels of every test of a build (tests/CMakeLists.txt,
fuzz/CMakeLists.txt), as docs/testing.md describes them:
  - each test has a label, and none outside the documented set;
  - a unit test needs nothing: never also blackbox, pg, redis, npm or slow;
  - every test named *_postgres is labelled pg;
  - every test reports a skip as a skip (SKIP_RETURN_CODE 77);
  - docs/testing.md names every label in use.
    labels_check.py CTEST BUILD_DIR DOCS/TESTING.MD"""
import json
import re
import subprocess
import sys

KNOWN = {"unit", "blackbox", "pg", "redis", "slow", "npm", "fuzz"}
NOT_UNIT = {"blackbox", "pg", "redis", "npm", "slow"}


def main():
    ctest, build, doc = sys.argv[1], sys.argv[2], sys.argv[3]
    out = subprocess.run([ctest, "--show-only=json-v1"], cwd=build, check=True,
                         capture_output=True, text=True).stdout
    tests = json.loads(out)["tests"]
    bad = []
    used = set()
    for t in tests:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        labels = set(props.get("LABELS", []))
        used |= labels
        name = t["name"]
        if not labels:
            bad.append(f"{name}: no label")
        if labels - KNOWN:
            bad.append(f"{name}: unknown label(s) {sorted(labels - KNOWN)}")
        if "unit" in labels and labels & NOT_UNIT:
            bad.append(f"{name}: unit, yet {sorted(labels & NOT_UNIT)}")
        if name.endswith("_postgres") and "pg" not in labels:
            bad.append(f"{name}: runs on PostgreSQL without the pg label")
        if str(props.get("SKIP_RETURN_CODE")) != "77":
            bad.append(f"{name}: no SKIP_RETURN_CODE 77 (a skip would count as a failure)")
    text = open(doc).read()
    for label in sorted(used):
        if not re.search(r"`" + re.escape(label) + r"`", text):
            bad.append(f"label {label}: not described in {doc}")
    for b in bad:
        print("FAIL:", b, file=sys.stderr)
    counts = {l: sum(1 for t in tests if l in {p["name"]: p["value"] for p in t.get("properties", [])}
                     .get("LABELS", [])) for l in sorted(used)}
    print(f"labels: {len(tests)} tests, " + ", ".join(f"{l} {n}" for l, n in counts.items()))
    sys.exit(1 if bad else 0)


main()
