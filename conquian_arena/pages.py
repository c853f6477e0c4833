"""Self-contained HTML pages: the replay page, and the page assets every page is made of.

A page's HTML, styles and scripts are files of the package, ``conquian_arena/assets/``
(package data, read with :mod:`importlib.resources`): :func:`page` fills a template
(``replay.html``, ``play.html``) with the files it names, ``{{> cards.css}}``, and with the
values given for its ``{{name}}`` fields, so that every page is one file that needs no
network.  The cards (``cards.js``, ``cards.css``, ``suits.svg``) are shared by the replay
and the play page.

:func:`replay_page` turns recorded games into ONE HTML file: the styles and the script
are inline, the cards are inline SVG drawn by the page's script, and every game's states
are JSON in the page, computed here from the validating replay
(:func:`conquian_arena.record.replay_states`), one entry after the deal and one after
every move, with each move described in words by :func:`conquian_arena.narration.describe_move`.
The page shows the referee's table (both hands face up, both melds split into sets and
runs, the face-up card and where it came from, the dead pile, the stock count), steps
forward and back (buttons, the arrow keys, Home and End), jumps to a move (the move
list and the slider), and picks a game when the file holds several.  The address
fragment ``#game=N&step=K`` opens game ``N`` at step ``K`` (a tournament report links
to its games that way).

The page's elements carry data attributes for tests and tools: ``#table[data-game][data-step]``,
``.hand[data-seat][data-cards]``, ``.meld[data-seat][data-cards]``, ``#face[data-card]``,
``#stock[data-count]``, ``#dead[data-cards]``, ``#move-text[data-step]``, ``#moves li[data-step]``
(cards as text, ``"AC 7H"``, in index order).

Used by ``conquian-replay FILE --html OUT`` (:mod:`conquian_arena.replay`), the
tournament report (:func:`conquian_arena.report.write_html_report`) and the play page
(:mod:`conquian_arena.webplay`).
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from conquian_env.actions import action_to_str
from conquian_env.cards import CARD_NAMES
from conquian_env.game import BOOL, FIELDS, PAIR, GameState
from conquian_env.render import meld_groups
from conquian_env.rules import rules_of_record

from .narration import describe_move, opening_text
from .record import RecordedGame, ReplayError, replay_states, result_problem

#: ``{{> FILE}}``: the asset FILE; ``{{name}}``: a value given to :func:`page`
_FIELD = re.compile(r"\{\{(>\s*)?([A-Za-z0-9_.-]+)\}\}")
_ASSET_NAME = re.compile(r"[A-Za-z0-9_-]+\.[a-z]+")


# --------------------------------------------------------------------------- the page assets
@functools.cache
def asset(name: str) -> str:
    """The text of the page asset ``name`` (a file of ``conquian_arena/assets/``), less its
    last newline.  Raises ``ValueError`` for a name that is not a plain file name."""
    if not _ASSET_NAME.fullmatch(name):
        raise ValueError(f"a page asset is a plain file name such as 'cards.css', got {name!r}")
    text = (resources.files("conquian_arena") / "assets" / name).read_text(encoding="utf-8")
    return text.removesuffix("\n")


def page(template: str, **values: str) -> str:
    """The page of the template asset ``template``: each ``{{> FILE}}`` of it replaced by the
    asset FILE, each ``{{name}}`` by ``values[name]``, as they are (escape a value first).

    What is put in is not read again, so a value may hold braces.  Raises ``ValueError``
    when the template has a field that ``values`` lacks, or ``values`` one the template lacks.
    """
    text = asset(template)
    fields = {m[2] for m in _FIELD.finditer(text) if not m[1]}
    if fields != set(values):
        missing, unused = sorted(fields - set(values)), sorted(set(values) - fields)
        raise ValueError(f"the page {template!r} has the fields {sorted(fields)}: missing {missing}, unknown {unused}")
    return _FIELD.sub(lambda m: asset(m[2]) if m[1] else values[m[2]], text)


# --------------------------------------------------------------------------- data for the page
def json_for_script(data: Any) -> str:
    """``data`` as JSON that is safe inside an HTML ``<script>`` element (no ``<``, ``>``, ``&``)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def state_row(state: GameState, groups: Callable[[int], list[list[int]]] = meld_groups) -> dict[str, Any]:
    """One state as the page's compact JSON: the fields of :data:`conquian_env.game.FIELDS`
    that have a short name, under that name.  Card sets are bit masks (exact in JavaScript
    numbers, at most 2**40), melds are their groups of card indexes, booleans 0 or 1.

    ``h`` hands, ``m`` meld groups per seat, ``c`` cards being laid with the face-up card,
    ``d`` dead pile, ``f`` face-up card (-1 none), ``src`` 0 turned / 1 discarded, ``o`` its
    owner, ``p`` refused once, ``k`` stock left, ``t`` seat to move, ``ph`` phase
    (0 offer, 1 meld, 2 discard, 3 force, 4 over), ``w`` winner (-1 none or draw).
    """
    row: dict[str, Any] = {}
    for name, kind, short in FIELDS:
        if short is None:
            continue
        value = getattr(state, name)
        if name == "melds":
            value = [groups(meld) for meld in value]
        elif name == "stock_pos":
            value = state.stock_left
        elif kind == PAIR:
            value = list(value)
        elif kind == BOOL:
            value = int(value)
        row[short] = value
    return row


def _cached_groups() -> Callable[[int], list[list[int]]]:
    cache: dict[int, list[list[int]]] = {}

    def groups(mask: int) -> list[list[int]]:
        if mask not in cache:
            cache[mask] = meld_groups(mask)
        return cache[mask]

    return groups


def game_data(game: RecordedGame) -> dict[str, Any]:
    """Everything the replay page shows of one game: the states after the deal and after
    every move, and every move in words.  Raises :class:`ReplayError` for an impossible record."""
    states, ids = replay_states(game)
    names = game.names
    groups = _cached_groups()
    first = game.data["first"]
    moves = [
        {"a": action_to_str(a), "s": states[k].player, "d": describe_move(states[k], a, states[k + 1], names)}
        for k, a in enumerate(ids)
    ]
    failure = game.data.get("failure")
    return {
        "index": game.index,
        "names": list(names),
        "first": first,
        "rules": rules_of_record(game.data).name,
        "result": game.result_text(),
        "problem": result_problem(game, states[-1]),
        "failure": failure.get("message") if isinstance(failure, dict) else None,
        "start": opening_text(names, first, CARD_NAMES[states[0].face_up]),
        "steps": _drop_repeated_melds([state_row(s, groups) for s in states]),
        "moves": moves,
    }


def _drop_repeated_melds(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Leave out ``m`` where it equals the step before's (the page carries it forward): a
    third less to store, since melds change only when a player finishes melding."""
    for before, row in zip(reversed(rows[:-1]), reversed(rows[1:]), strict=True):
        if row["m"] == before["m"]:
            del row["m"]
    return rows


def game_label(game: RecordedGame) -> str:
    """The game picker's text: ``"game 3: greedy vs random, p0 greedy won, 41 moves"``."""
    p = game.players
    moves = game.data.get("moves", len(game.actions))
    return f"game {game.index}: {p[0]} vs {p[1]}, {game.result_text()}, {moves} moves"


def replay_page(games: Sequence[RecordedGame], title: str = "Conquian replay") -> str:
    """One self-contained HTML page replaying ``games`` (a game picker when there are several).

    Raises :class:`ReplayError` for a record whose deal or moves are impossible, and
    ``ValueError`` when ``games`` is empty.
    """
    return replay_page_of([(game_label(g), game_data(g)) for g in games], title)


def replay_page_of(entries: Sequence[tuple[str, dict[str, Any]]], title: str = "Conquian replay") -> str:
    """The replay page of games already turned into ``(label, game_data(game))`` pairs."""
    if not entries:
        raise ValueError("no games to replay")
    index = []
    blocks = []
    for label, data in entries:
        index.append({"i": data["index"], "label": label})
        blocks.append(f'<script type="application/json" data-game="{data["index"]}">{json_for_script(data)}</script>')
    count = f"{len(entries)} games" if len(entries) != 1 else "1 game"
    return page(
        "replay.html", title=html.escape(title), count=count, index=json_for_script(index), games="\n".join(blocks)
    )


def write_replay_page(games: Sequence[RecordedGame], path: str | Path, title: str = "Conquian replay") -> int:
    """Write :func:`replay_page` to ``path``; returns its size in bytes."""
    text = replay_page(games, title)
    data = text.encode("utf-8")
    Path(path).write_bytes(data)
    return len(data)


__all__ = [
    "ReplayError",
    "asset",
    "game_data",
    "game_label",
    "json_for_script",
    "page",
    "replay_page",
    "replay_page_of",
    "state_row",
    "write_replay_page",
]
