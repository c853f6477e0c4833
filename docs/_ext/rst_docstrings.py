"""A griffe extension for the documentation site: the project's docstrings are written in a
reStructuredText flavour, mkdocstrings renders Markdown.  This turns, before rendering:

* roles (``:class:`~a.b.C```, ``:func:`f```, ``:mod:`m```, ...) into code spans (``C``, ``f``);
* a paragraph ending in ``::`` and the indented block after it into a fenced code block;
* doctest lines (``>>> ...``) into a fenced ``pycon`` block;
* simple tables (``====  ====`` borders) into Markdown tables.

Only the text given to the renderer changes; the source files are not touched.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const|term|ref):`(~?)([^`]+)`")
_CODE = re.compile(r"(`+).+?\1")
_BORDER = re.compile(r"^(\s*)(=+)(\s+=+)+\s*$")


def _role(match: re.Match[str]) -> str:
    tilde, target = match.group(1), match.group(2).strip()
    if "<" in target and target.endswith(">"):  # :ref:`text <target>`
        target = target.split("<", 1)[0].strip()
    if tilde:
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _cells(line: str, starts: list[int]) -> list[str]:
    cells = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else None
        cells.append(line[start:end].strip() if end is not None else line[start:].strip())
    return cells


def _escape_pipes(cell: str) -> str:
    # a pipe outside a code span would end the cell; inside one the tables extension keeps it
    out, last = [], 0
    for span in _CODE.finditer(cell):
        out += [cell[last : span.start()].replace("|", "&#124;"), span.group(0)]
        last = span.end()
    return "".join([*out, cell[last:].replace("|", "&#124;")])


def _table(lines: list[str], i: int) -> tuple[list[str], int] | None:
    """The simple table starting at line ``i`` as Markdown lines, and the line after it."""
    border = lines[i]
    starts = [m.start() for m in re.finditer(r"=+", border)]
    rows: list[list[str]] = []
    header: list[str] | None = None
    j = i + 1
    while j < len(lines):
        line = lines[j]
        if _BORDER.match(line):
            if j + 1 < len(lines) and header is None and rows and not _is_end(lines, j):
                header, rows = _join(rows), []
                j += 1
                continue
            break
        if not line.strip():
            j += 1
            continue
        cells = _cells(line, starts)
        if rows and not cells[0] and line[: starts[0] + 1].strip() == "":
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
        else:
            rows.append(cells)
        j += 1
    else:
        return None  # no closing border: leave the text alone
    header = header if header is not None else [""] * len(starts)
    out = ["", "| " + " | ".join(_escape_pipes(c) for c in header) + " |", "|" + " --- |" * len(starts)]
    out += ["| " + " | ".join(_escape_pipes(c) for c in row) + " |" for row in rows]
    out.append("")
    return out, j + 1


def _join(rows: list[list[str]]) -> list[str]:
    return [" ".join(col).strip() for col in zip(*rows, strict=True)]


def _is_end(lines: list[str], j: int) -> bool:
    """Whether the border at line ``j`` closes its table (nothing but blank lines or prose after it
    before another border would)."""
    for line in lines[j + 1 :]:
        if _BORDER.match(line):
            return False
        if not line.strip():
            return True
    return True


def convert(text: str) -> str:
    """The docstring ``text`` with its reStructuredText constructs in Markdown."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _BORDER.match(line):
            table = _table(lines, i)
            if table is not None:
                rows, i = table
                out += [_ROLE.sub(_role, r) for r in rows]
                continue
        if line.lstrip().startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip() and lines[i].lstrip().startswith((">>>", "...")):
                block.append(lines[i].strip())
                i += 1
            out += ["", "```pycon", *block, "```", ""]
            continue
        if line.rstrip().endswith("::"):
            base = _indent(line)
            head = line.rstrip()[:-2].rstrip()
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and _indent(lines[j]) > base:
                if head.strip():
                    out.append(_ROLE.sub(_role, head + ":"))
                block = []
                while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > base):
                    block.append(lines[j])
                    j += 1
                while block and not block[-1].strip():
                    block.pop()
                cut = min(_indent(b) for b in block if b.strip())
                out += ["", " " * base + "```python", *[" " * base + b[cut:] for b in block], " " * base + "```", ""]
                i = j
                continue
        out.append(_ROLE.sub(_role, line))
        i += 1
    return "\n".join(out)


class RstDocstrings(griffe.Extension):
    """Rewrites each docstring once, when its object is made."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)
