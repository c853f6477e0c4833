"""The site's two kinds of page told apart (a mkdocs hook, named in mkdocs.yml).

The guide speaks to users; the research notes (every page under ``docs/experiments/``) are the
record of what was tried and measured.  Each research note, a new one included, gets here:

* a low search boost (material's ``search.boost``, unless its front matter sets one), so that a
  search for a user's topic answers with the guide and the API reference first;
* a line under its title saying what it is and where the guide is.

The home page's ``<!-- ladder -->`` marker becomes the bot ladder's table, read from the
ladder's files (``docs/ladder/ratings.csv`` and ``config.json``, written by ``conquian-evaluate``),
so the home page names every bot of the ladder and its numbers as they were measured.

The research notes' nav is made from their folder (flat: the index, then each note under its
title), and it and the API reference's generated nav file are taken out of the pages once
mkdocs-literate-nav has read them.
"""

from __future__ import annotations

import csv
import json
import posixpath
from pathlib import Path

from mkdocs.plugins import CombinedEvent, event_priority
from mkdocs.structure.files import File

DOCS = Path(__file__).resolve().parents[1]
RESEARCH = "experiments/"
NAV_FILE = "SUMMARY.md"
RESEARCH_BOOST = 0.1
LADDER = DOCS / "ladder"
MARKER = "<!-- ladder -->"


def _relative(page, target: str) -> str:
    return posixpath.relpath(target, posixpath.dirname(page.file.src_uri) or ".")


def ladder_table(folder: Path = LADDER) -> str:
    """The ladder's bots, best first: Elo with its 95% interval, score over all games."""
    with open(folder / "ratings.csv", newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: -float(r["elo"]))
    config = json.loads((folder / "config.json").read_text())
    lines = [
        f"A round robin of the shipped bots, {config['games']} games a pair on duplicate deals "
        f"(`conquian-evaluate {' '.join(config['specs'])} --games {config['games']} --seed {config['seed']}`); "
        "ratings are Bradley-Terry on the Elo scale (mean 0, draws as half wins) with 95% bootstrap "
        "intervals over deals, the score over all of a bot's games:",
        "",
        "| bot | Elo [95% CI] | score |",
        "| --- | --- | --- |",
    ]
    for r in rows:
        elo, low, high = (round(float(r[k])) for k in ("elo", "elo_low", "elo_high"))
        lines.append(f"| `{r['spec']}` | {elo:+d} [{low:+d}, {high:+d}] | {float(r['score']):.3f} |")
    return "\n".join(lines) + "\n"


def research_nav(docs: Path = DOCS) -> str:
    """The research notes' nav (mkdocs-literate-nav's form), flat: the folder's index, then every
    other page under it by path, each under its own title (its first heading)."""
    folder = docs / RESEARCH
    pages = sorted(folder.rglob("*.md"), key=lambda p: (p != folder / "README.md", p.as_posix()))
    lines = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        title = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), page.parent.name)
        title = title.replace("`", "").replace("[", "(").replace("]", ")")
        lines.append(f"* [{title}]({page.relative_to(folder).as_posix()})")
    return "\n".join(lines) + "\n"


@event_priority(-50)  # after the plugins that add pages, before mkdocs-literate-nav reads the nav files (-100)
def _add_research_nav(files, config):
    """The research notes' nav file, made from their folder (a new note needs no line anywhere)."""
    files.append(File.generated(config, RESEARCH + NAV_FILE, content=research_nav(Path(config["docs_dir"]))))
    return files


@event_priority(-110)  # once mkdocs-literate-nav has read them
def _drop_nav_files(files, config):
    """The nav files (the research notes', and the API reference's, written by docs/_ext/gen_api.py)
    are no pages of the site."""
    for path in (RESEARCH + NAV_FILE, "api/" + NAV_FILE):
        nav = files.get_file_from_path(path)
        if nav is not None:
            files.remove(nav)
    return files


on_files = CombinedEvent(_add_research_nav, _drop_nav_files)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri.startswith(RESEARCH):
        search = page.meta.setdefault("search", {})
        search.setdefault("boost", RESEARCH_BOOST)
        note = (
            f"*A research note: the record of an experiment and of what it measured. "
            f"To use the package, read [the guide]({_relative(page, 'getting-started.md')}).*\n"
        )
        head, sep, rest = markdown.partition("\n")
        if head.startswith("# "):
            return f"{head}\n\n{note}{sep}{rest}"
        return note + "\n" + markdown
    if MARKER in markdown:
        return markdown.replace(MARKER, ladder_table())
    return markdown
