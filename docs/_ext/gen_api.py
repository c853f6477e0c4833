"""The API reference, generated at build time (mkdocs-gen-files): one page per public module.

The modules are found by walking the packages' source folders, not by importing them, so a
module added, moved or removed gets (or loses) its page and its line in the nav with no edit of
mkdocs.yml or of the tests; nothing here or in mkdocstrings' python handler (griffe reads the
source) imports the packages, so the site needs none of their dependencies.  A module is public
when no part of its dotted name starts with an underscore.

Pages: ``api/<package>/index.md`` for a package's ``__init__``, ``api/<package>/<rest of the
dotted name>.md`` for a module (``api/conquian_env/integrations.rllib.md``), ``api/index.md``
the overview (each module with the first line of its docstring) and ``api/SUMMARY.md`` the nav
(mkdocs-literate-nav), in the packages' layer order.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: in the order the layers import one another: each only those before it
PACKAGES = ("conquian_env", "agents", "conquian_arena", "conquian_train")
#: the reference pages rank below the guide's in the site's search (material's search.boost)
API_BOOST = 0.5


def public_modules(root: Path = ROOT) -> list[str]:
    """Every public module of the packages, found in their folders: each package first, then its
    modules in the order of their dotted names."""
    found = []
    for package in PACKAGES:
        names = []
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            # a module of a folder that is no package (no __init__.py on the way) is not importable
            folders = [root.joinpath(*parts[:i]) for i in range(1, len(path.relative_to(root).parts))]
            if any(not (folder / "__init__.py").is_file() for folder in folders):
                continue
            if not any(part.startswith("_") for part in parts):
                names.append(".".join(parts))
        found += sorted(names, key=lambda name: (name != package, name))
    return found


def page_of(module: str) -> str:
    """The page of a module under ``api/`` (``conquian_env.integrations.rllib`` ->
    ``conquian_env/integrations.rllib.md``)."""
    package, _, rest = module.partition(".")
    return f"{package}/{rest or 'index'}.md"


def summary_line(module: str, root: Path = ROOT) -> str:
    """The first sentence-line of a module's docstring, read with ``ast`` (nothing is imported)."""
    parts = module.split(".")
    path = root.joinpath(*parts).with_suffix(".py")
    if not path.is_file():
        path = root.joinpath(*parts, "__init__.py")
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ")
    return " ".join(first.split()).replace("|", "&#124;")


def _pages(root: Path = ROOT) -> dict[str, str]:
    modules = public_modules(root)
    front = f"---\nsearch:\n  boost: {API_BOOST}\n---\n\n"
    pages = {page_of(m): f"{front}::: {m}\n" for m in modules}
    rows = []
    for module in modules:
        # the docstring's roles (:class:`x`) shown as code: the overview is plain Markdown
        line = summary_line(module, root)
        for role in (":class:", ":func:", ":mod:", ":meth:", ":data:", ":attr:", ":exc:"):
            line = line.replace(role, "")
        line = line.replace("``", "`").replace("`~", "`")
        rows.append(f"| [`{module}`]({page_of(module)}) | {line} |")
    pages["index.md"] = (
        front
        + "# API reference\n\n"
        + "Generated from the docstrings of the public modules, one page per module, found in the "
        + "packages' folders when the site is built (read from the source by griffe: nothing is "
        + "imported, so the pages need none of the optional extras). The packages are layers, each "
        + "importing only those before it: `conquian_env` (rules, environments) ← `agents` (bots) ← "
        + "`conquian_arena` (games between bots and people, tournaments, records) ← `conquian_train` "
        + "(the training recipes); see [the package layout](../development.md#package-layout).\n\n"
        + "| module | what it is |\n| --- | --- |\n"
        + "\n".join(rows)
        + "\n"
    )
    nav = ["* [Overview](index.md)"]
    for package in PACKAGES:
        inside = [m for m in modules if m.split(".")[0] == package]
        nav += [f"* {package}", f"    * [{package}]({page_of(package)})"]
        nav += [f"    * [{m.partition('.')[2]}]({page_of(m)})" for m in inside if m != package]
    pages["SUMMARY.md"] = "\n".join(nav) + "\n"
    return pages


def _write() -> None:
    import mkdocs_gen_files

    for name, text in _pages().items():
        with mkdocs_gen_files.open(f"api/{name}", "w") as out:
            out.write(text)


if __name__ in ("__main__", "<run_path>"):  # mkdocs-gen-files runs this file as a script
    _write()
