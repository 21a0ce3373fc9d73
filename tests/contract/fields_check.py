#!/usr/bin/env python3
"""fields_check.py - a signed field must act (issue 40 s2).

Walks every property of every schema in contracts/schemas/*.schema.json and
checks docs/contracts.md's "Field table": every property path has a row, every
row names a property that exists, and every test the row names exists in the
tree (a C test function, a cmocka test, a shell test's step or a fixture
file). A new field cannot be added without saying what enforces it.

    fields_check.py SOURCE_DIR          check (exit 1 on a gap)
    fields_check.py SOURCE_DIR --list   print the property paths

Paths: `family: a.b` for nested objects, `a[]` for array items, `a.*` for the
members of a map (additionalProperties / patternProperties).
"""
import json
import os
import re
import sys


def resolve(root, node):
    seen = 0
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        node = root
        for part in ref[2:].split("/"):
            node = node[part]
        seen += 1
        assert seen < 20, "a $ref cycle"
    return node


def walk(root, node, prefix, out, depth=0):
    node = resolve(root, node)
    if not isinstance(node, dict) or depth > 20:
        return
    for key in ("oneOf", "anyOf", "allOf"):
        for sub in node.get(key, []):
            walk(root, sub, prefix, out, depth + 1)
    for name, sub in node.get("properties", {}).items():
        path = prefix + ("." if prefix else "") + name
        out.add(path)
        walk(root, sub, path, out, depth + 1)
    maps = list(node.get("patternProperties", {}).values())
    if isinstance(node.get("additionalProperties"), dict):
        maps.append(node["additionalProperties"])
    for sub in maps:
        walk(root, sub, prefix + ".*", out, depth + 1)
    items = node.get("items")
    if isinstance(items, dict):
        walk(root, items, prefix + "[]", out, depth + 1)


def schema_paths(src):
    d = os.path.join(src, "contracts", "schemas")
    paths = set()
    for f in sorted(os.listdir(d)):
        if not f.endswith(".schema.json"):
            continue
        family = f[: -len(".schema.json")]
        with open(os.path.join(d, f)) as fh:
            root = json.load(fh)
        out = set()
        walk(root, root, "", out)
        paths |= {f"{family}: {p}" for p in out}
    return paths


ROW = re.compile(r"^\|\s*`([a-z_]+: [^`]+)`\s*\|(.*)\|\s*([^|]*)\|\s*$")


gaps = []


def table_rows(src):
    rows = {}
    inside = False
    with open(os.path.join(src, "docs", "contracts.md")) as fh:
        for line in fh:
            if line.startswith("## "):
                inside = line.strip() == "## Field table"
                continue
            if not inside:
                continue
            m = ROW.match(line.rstrip("\n"))
            if m:
                tests = [t.strip(" `") for t in m.group(3).split(",") if t.strip(" `")]
                rows[m.group(1)] = tests
                if m.group(2).strip().startswith("GAP"):
                    gaps.append(m.group(1))
    return rows


def tree_text(src):
    """Every test source, for the test names to be found in."""
    chunks = []
    for top in ("tests", "contracts/fixtures"):
        for dirpath, _, files in os.walk(os.path.join(src, top)):
            for f in files:
                p = os.path.join(dirpath, f)
                if p.endswith("fields_check.py"):
                    continue
                try:
                    with open(p, errors="replace") as fh:
                        chunks.append(f + "\n" + fh.read())
                except OSError:
                    pass
    return "\n".join(chunks)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    src = sys.argv[1]
    paths = schema_paths(src)
    if "--list" in sys.argv:
        print("\n".join(sorted(paths)))
        return 0
    rows = table_rows(src)
    text = tree_text(src)
    bad = 0
    for p in sorted(paths - rows.keys()):
        print(f"no row in docs/contracts.md's Field table for {p}: say what enforces it "
              "and name its test, or remove the field")
        bad += 1
    for p in sorted(rows.keys() - paths):
        print(f"the Field table's row {p} names no schema property")
        bad += 1
    for p, tests in sorted(rows.items()):
        if not tests:
            print(f"the Field table's row {p} names no test")
            bad += 1
        for t in tests:
            if not re.search(r"(?<![A-Za-z0-9_])" + re.escape(t) + r"(?![A-Za-z0-9_])", text):
                print(f"the Field table's row {p} names test {t}, which is not in tests/ "
                      "or contracts/fixtures/")
                bad += 1
    for p in gaps:
        print(f"gap (read, not asserted by a test): {p}")
    print(f"{len(paths)} schema properties, {len(rows)} rows, {len(gaps)} gaps, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
