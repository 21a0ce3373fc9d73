#!/usr/bin/env python3
"""Whole-string copies (run by check-style.sh): snprintf(dst, n, "%s", src) into
a fixed buffer cuts a too-long src silently, and a cut identifier is another
identifier (a project id, a model, a URL). In src/ such a copy is refused:
AW_COPY_ARRAY(dst, src) where both are arrays (the bound proved at compile
time), else aw_str_copy / AW_STR_COPY and an error on -1 (include/awooop/str.h).
Text meant for people goes through a format with more than a bare "%s".

ALLOWED could list files still to convert with the copies each has left (a
count may only shrink); every file of src/ is converted, so it is empty."""
import os
import re
import sys

ALLOWED = {}


def calls(text):
    """(offset, argument text) of every snprintf( call, strings skipped."""
    for m in re.finditer(r"\bsnprintf\s*\(", text):
        i = j = m.end()
        depth = 1
        while depth and j < len(text):
            c = text[j]
            if c in "\"'":
                j += 1
                while text[j] != c:
                    j += 2 if text[j] == "\\" else 1
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            j += 1
        yield m.start(), text[i:j - 1]


def args(s):
    out, cur, depth, k = [], "", 0, 0
    while k < len(s):
        c = s[k]
        if c in "\"'":
            e = k + 1
            while s[e] != c:
                e += 2 if s[e] == "\\" else 1
            cur += s[k:e + 1]
            k = e + 1
            continue
        depth += c in "([{"
        depth -= c in ")]}"
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
        k += 1
    return out + [cur.strip()]


os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
found = {}
for root, _, files in os.walk("src"):
    for f in sorted(files):
        if not f.endswith((".c", ".h")):
            continue
        path = os.path.join(root, f)
        text = open(path, encoding="utf-8").read()
        for pos, body in calls(text):
            a = args(body)
            if len(a) == 4 and a[2] == '"%s"':
                found.setdefault(path, []).append(text.count("\n", 0, pos) + 1)
bad = 0
for path in sorted(found):
    lines = found[path]
    if len(lines) > ALLOWED.get(path, 0):
        bad = 1
        for n in lines:
            print(f'{path}:{n}: snprintf(dst, n, "%s", src) cuts a long src silently: '
                  "AW_COPY_ARRAY (array to array) or aw_str_copy/AW_STR_COPY and an "
                  "error on -1 (include/awooop/str.h)")
for path, n in sorted(ALLOWED.items()):
    if len(found.get(path, [])) < n:
        bad = 1
        print(f"scripts/check-copies.py: {path} has {len(found.get(path, []))} copies left, "
              f"ALLOWED says {n}: lower it")
sys.exit(bad)
