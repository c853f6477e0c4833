"""What the packages tell a user (errors, refusals, help texts) names nothing a wheel user lacks:
no repository path such as ``docs/integrations/rllib.md``.  An error names the documentation's page
by its title on the site, or a command that is installed (``help(module)``, ``conquian-play --rules``).
Docstrings may name repository files: they are the source's own documentation."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("conquian_env", "agents", "conquian_arena", "conquian_train")


def strings_outside_docstrings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_no_message_names_a_file_of_the_repository():
    # before: the RLlib and Tianshou refusals named docs/integrations/*.md, the removed knobs docs/benchmarks.md
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text[:100]!r}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, text in strings_outside_docstrings(path)
        if "docs/" in text
    ]
    assert not found, "\n".join(found)
