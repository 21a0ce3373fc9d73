#!/usr/bin/env python3
"""Checks the links of README.md and docs/**/*.md (CTest doc_links).

Every link must stay in the repository: a relative path that exists (file or
folder) under the repository root, optionally with a #fragment; a fragment
must name a heading (GitHub's slug) or an <a id/name> of the file it points
to, when that file is Markdown. Links to other sites (http:, mailto:, ...)
and absolute paths are refused: the documents are read in clones, packages
and offline. Links inside code (fenced blocks, `code spans`) are not links.

  scripts/check-doc-links.py [ROOT]      exit 1 naming each broken link"""
import os
import re
import sys
from urllib.parse import unquote

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]*)>", re.I)
ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.I)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def strip_code(text):
    """The text with fenced blocks blanked (lines kept) and code spans removed."""
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^\s{0,3}(`{3,}|~{3,})", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append("")
            continue
        if m:
            fence = m.group(1)
            out.append("")
            continue
        out.append(re.sub(r"(`+)(?:(?!\1).)+?\1", "", line))
    return "\n".join(out)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    t = re.sub(r"<[^>]+>", "", t)  # inline HTML
    t = t.replace("`", "").lower()
    t = "".join(c for c in t if c.isalnum() or c in " -_")
    return t.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        found, seen, fence = set(), {}, None
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"^\s{0,3}(`{3,}|~{3,})", line)
                if fence:
                    if m and m.group(1)[0] == fence[0]:
                        fence = None
                    continue
                if m:
                    fence = m.group(1)
                    continue
                found.update(ANCHOR.findall(line))
                h = HEADING.match(line)
                if h:
                    s = slug(h.group(2))
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    found.add(s if n == 0 else f"{s}-{n}")
        _anchors[path] = found
    return _anchors[path]


def check(root, md):
    errors = []
    rel = os.path.relpath(md, root)
    with open(md, encoding="utf-8") as f:
        text = strip_code(f.read())
    for lineno, line in enumerate(text.split("\n"), 1):
        targets = LINK.findall(line) + AUTOLINK.findall(line)
        m = REFDEF.match(line)
        if m:
            targets.append(m.group(1))
        for target in targets:
            where = f"{rel}:{lineno}: ({target})"
            if not target:
                errors.append(f"{where} empty link")
                continue
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
                errors.append(f"{where} leaves the repository (a link to another site)")
                continue
            if target.startswith("/"):
                errors.append(f"{where} absolute path: write it relative to {rel}")
                continue
            path, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(md), unquote(path))) if path else md
            if os.path.relpath(dest, root).startswith(".."):
                errors.append(f"{where} leaves the repository")
                continue
            if not os.path.exists(dest):
                errors.append(f"{where} no such file")
                continue
            if frag and dest.endswith(".md") and os.path.isfile(dest):
                if unquote(frag).lower() not in {a.lower() for a in anchors(dest)}:
                    errors.append(f"{where} no heading or anchor #{frag} in "
                                  f"{os.path.relpath(dest, root)}")
    return errors


def main(argv):
    root = os.path.abspath(argv[0] if argv else
                           os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    files = [os.path.join(root, "README.md")]
    for d, dirs, names in os.walk(os.path.join(root, "docs")):
        dirs.sort()
        files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".md")]
    errors = []
    for md in files:
        errors += check(root, md)
    for e in errors:
        print(e)
    print(f"doc links: {len(files)} files, {len(errors)} broken", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
