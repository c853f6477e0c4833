"""The site's two kinds of page told apart (a mkdocs hook, named in mkdocs.yml).

The guide speaks to users; the research notes (every page under ``docs/experiments/``) are the
record of what was tried and measured.  Each research note, a new one included, gets here:

* a low search boost (material's ``search.boost``, unless its front matter sets one), so that a
  search for a user's topic answers with the guide and the API reference first;
* a line under its title saying what it is and where the guide is.

The home page's ``<!-- ladder -->`` marker becomes the bot ladder's table, read from the
ladder's files (``docs/ladder/ratings.csv`` and ``config.json``, written by ``conquian-evaluate``),
so the home page names every bot of the ladder and its numbers as they were measured.

And the API reference's generated nav file is taken out of the pages once the nav is read from it.
"""

from __future__ import annotations

import csv
import json
import posixpath
from pathlib import Path

RESEARCH = "experiments/"
RESEARCH_BOOST = 0.1
LADDER = Path(__file__).resolve().parents[1] / "ladder"
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


def on_files(files, config):
    """The API reference's nav file (written by docs/_ext/gen_api.py, read by mkdocs-literate-nav,
    whose ``on_files`` runs before the hooks') is no page of the site."""
    nav = files.get_file_from_path("api/SUMMARY.md")
    if nav is not None:
        files.remove(nav)
    return files


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
