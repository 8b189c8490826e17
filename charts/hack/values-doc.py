#!/usr/bin/env python3
"""Writes the values table of charts/kraft-operator/README.md from the
`# --` comments of values.yaml (the helm-docs convention), between the
markers `<!-- values:begin -->` and `<!-- values:end -->`.

    values-doc.py           rewrite the table
    values-doc.py --check   exit 1 when the README's table is out of date

A key's row is the comment block right above it (starting with `# --`), its
dotted path, and its default as compact JSON. Keys without their own comment
(parents like `image:`) get no row; their children do.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

CHART = Path(__file__).resolve().parents[1] / "kraft-operator"
BEGIN, END = "<!-- values:begin -->", "<!-- values:end -->"


def rows() -> list[tuple[str, str, str]]:
    text = (CHART / "values.yaml").read_text()
    values = yaml.safe_load(text)
    out = []
    stack: list[tuple[int, str]] = []
    comment: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("# --"):
            comment = [s[4:].strip()]
            continue
        if s.startswith("#") and comment:
            comment.append(s[1:].strip())
            continue
        m = re.match(r"^( *)([A-Za-z0-9_.\-/]+):", line)
        if not m or s.startswith("-"):
            if not s:
                comment = []
            continue
        indent, key = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = [k for _, k in stack] + [key]
        stack.append((indent, key))
        if comment:
            default = values
            for k in path:
                default = default[k]
            out.append((".".join(path), json.dumps(default, separators=(",", ":")), " ".join(comment)))
        comment = []
    return out


def table() -> str:
    def cell(t: str) -> str:
        return t.replace("|", "\\|")

    lines = ["| key | default | description |", "|---|---|---|"]
    for key, default, doc in rows():
        lines.append(f"| `{key}` | `{cell(default)}` | {cell(doc)} |")
    return "\n".join(lines)


def main() -> int:
    readme = CHART / "README.md"
    text = readme.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:start] + "\n" + table() + "\n" + text[end:]
    if sys.argv[1:] == ["--check"]:
        if new != text:
            print(f"values-doc: the values table of {readme} is out of date: run `make helm-docs`", file=sys.stderr)
            return 1
        return 0
    readme.write_text(new)
    print(f"values-doc: wrote the values table of {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
