"""Self-contained HTML pages: the replay page, and the card pictures and styles the play page shares.

:func:`replay_page` turns recorded games into ONE HTML file that needs no network: the
styles and the script are inline, the cards are inline SVG drawn by the page's script,
and every game's states are JSON in the page, computed here from the validating replay
(:func:`conquian_arena.record.replay_states`), one entry after the deal and one after
every move, with each move described in words by :func:`conquian_arena.play.describe_move`.
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

Used by ``conquian-replay FILE --html OUT`` (:mod:`conquian_arena.replay`) and the
tournament report (:func:`conquian_arena.report.write_html_report`); the play page
(:mod:`conquian_arena.webplay`) draws its cards with :data:`CARD_JS`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from conquian_env.actions import action_to_str
from conquian_env.cards import CARD_NAMES
from conquian_env.game import GameState
from conquian_env.render import meld_groups

from .play import describe_move
from .record import RecordedGame, ReplayError, replay_states, result_problem


# --------------------------------------------------------------------------- data for the page
def json_for_script(data: Any) -> str:
    """``data`` as JSON that is safe inside an HTML ``<script>`` element (no ``<``, ``>``, ``&``)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def state_row(state: GameState, groups: Callable[[int], list[list[int]]] = meld_groups) -> dict[str, Any]:
    """One state as the page's compact JSON: card sets are bit masks (exact in JavaScript
    numbers, at most 2**40), melds are their groups of card indexes.

    ``h`` hands, ``m`` meld groups per seat, ``c`` cards being laid with the face-up card,
    ``d`` dead pile, ``f`` face-up card (-1 none), ``src`` 0 turned / 1 discarded, ``o`` its
    owner, ``p`` refused once, ``k`` stock left, ``t`` seat to move, ``ph`` phase
    (0 offer, 1 meld, 2 discard, 3 force, 4 over), ``w`` winner (-1 none or draw).
    """
    return {
        "h": list(state.hands),
        "m": [groups(state.melds[0]), groups(state.melds[1])],
        "c": state.chosen,
        "d": state.dead,
        "f": state.face_up,
        "src": state.source,
        "o": state.owner,
        "p": int(state.passed),
        "k": state.stock_left,
        "t": state.player,
        "ph": state.phase,
        "w": state.winner,
    }


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
        "forcing": bool(game.data["forcing"]),
        "result": game.result_text(),
        "problem": result_problem(game, states[-1]),
        "failure": failure.get("message") if isinstance(failure, dict) else None,
        "start": f"{names[first]} turned {CARD_NAMES[states[0].face_up]} from the stock to start",
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


# --------------------------------------------------------------------------- cards (shared with the play page)
#: the four suit shapes, drawn in a 20 x 20 box, as SVG symbols (one hidden <svg> per page)
SUIT_SYMBOLS = """<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs>
<symbol id="suit-C" viewBox="0 0 20 20"><path d="M5.8 5.6a4.2 4.2 0 1 0 8.4 0a4.2 4.2 0 1 0-8.4 0Z\
M0.9 11.6a4.2 4.2 0 1 0 8.4 0a4.2 4.2 0 1 0-8.4 0ZM10.7 11.6a4.2 4.2 0 1 0 8.4 0a4.2 4.2 0 1 0-8.4 0Z\
M9 9.5h2l1.6 9.5h-5.2Z"/></symbol>
<symbol id="suit-D" viewBox="0 0 20 20"><path d="M10 0.8L17.6 10L10 19.2L2.4 10Z"/></symbol>
<symbol id="suit-H" viewBox="0 0 20 20"><path d="M10 18.5C10 18.5 1 12 1 6.6C1 3.6 3.3 1.5 5.8 1.5\
C7.8 1.5 9.3 2.7 10 4.3C10.7 2.7 12.2 1.5 14.2 1.5C16.7 1.5 19 3.6 19 6.6C19 12 10 18.5 10 18.5Z"/></symbol>
<symbol id="suit-S" viewBox="0 0 20 20"><path d="M10 0.8C10 0.8 1 7.8 1 12.4C1 14.9 3 16.7 5.3 16.7\
C7 16.7 8.3 15.9 9.2 14.8C9 16.5 8.3 18 7 19.2H13C11.7 18 11 16.5 10.8 14.8C11.7 15.9 13 16.7 14.7 16.7\
C17 16.7 19 14.9 19 12.4C19 7.8 10 0.8 10 0.8Z"/></symbol>
</defs></svg>"""

#: card drawing in the browser: cardSvg(index, extraClass, extraAttributes), backSvg(), cardsOf(mask) ...
CARD_JS = r"""
const RANKS = "A234567JQK", SUITS = "CDHS";
const PHASES = ["offer", "meld", "discard", "force", "over"];
function cardName(c) { return RANKS[c % 10] + SUITS[Math.floor(c / 10)]; }
function cardsOf(mask) {  // card indexes of a bit mask (exact: masks stay below 2**40)
  const out = [];
  for (let c = 0; c < 40; c++) if (Math.floor(mask / 2 ** c) % 2 === 1) out.push(c);
  return out;
}
function namesOf(cards) { return cards.map(cardName).join(" "); }
function esc(text) {
  const table = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"};
  return String(text).replace(/[&<>"']/g, ch => table[ch]);
}
function cardSvg(c, cls = "", attrs = "") {
  const rank = RANKS[c % 10], suit = SUITS[Math.floor(c / 10)];
  const color = (suit === "D" || suit === "H") ? "red" : "black";
  return `<svg class="card ${color} ${cls}" viewBox="0 0 56 80" data-card="${rank}${suit}" ${attrs}>` +
    `<title>${rank}${suit}</title>` +
    `<rect class="face" x="0.75" y="0.75" width="54.5" height="78.5" rx="5"/>` +
    `<text class="rank" x="4" y="19">${rank}</text>` +
    `<use href="#suit-${suit}" x="4" y="23" width="13" height="13"/>` +
    `<use href="#suit-${suit}" x="20" y="40" width="30" height="30"/></svg>`;
}
function backSvg(cls = "") {
  return `<svg class="card back ${cls}" viewBox="0 0 56 80"><rect class="face" x="0.75" y="0.75" width="54.5"` +
    ` height="78.5" rx="5"/><rect class="inner" x="6" y="6" width="44" height="68" rx="3"/></svg>`;
}
const EMPTY = '<span class="empty">empty</span>';
function meldHtml(groups, cls = "") {  // groups: lists of card indexes (sets and runs)
  if (!groups.length) return `<span class="empty">no meld</span>`;
  return groups.map(g => `<span class="group">${g.map(c => cardSvg(c, cls)).join("")}</span>`).join("");
}
"""

#: the table's look (felt, cards, melds), shared by the replay and the play page
CARD_CSS = """
:root { --felt: #1c6038; --felt-dark: #134528; --ink: #f0f0e6; --gold: #f0be28; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: #0f2a1a;
  color: var(--ink); }
header { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; padding: 8px 14px; background: #0b1f13; }
header h1 { font-size: 18px; margin: 0 8px 0 0; }
select, button, input { font: inherit; }
button { background: #e8e8dc; color: #111; border: 1px solid #777; border-radius: 6px; padding: 4px 12px;
  cursor: pointer; }
button:disabled { opacity: 0.35; cursor: default; }
button:not(:disabled):hover { background: #fff; }
.felt { background: var(--felt); border-radius: 10px; padding: 10px 14px; }
.seat { min-height: 96px; }
.who { font-weight: 600; margin: 2px 0 4px; }
.who.to-move { color: var(--gold); }
.row { display: flex; flex-wrap: wrap; gap: 14px; align-items: flex-end; min-height: 84px; }
.label { font-size: 12px; opacity: 0.8; }
.card { width: 56px; height: 80px; flex: none; display: inline-block; vertical-align: bottom; }
.card .face { fill: #fbfbf5; stroke: #5a5a5a; stroke-width: 1.2; }
.card.red { fill: #c81e28; } .card.black { fill: #141414; }
.card .rank { font: 700 17px system-ui, sans-serif; }
.card.back .face { fill: #28468f; stroke: #ddd; } .card.back .inner { fill: none; stroke: #96aae6; }
.hand { display: flex; gap: 3px; flex-wrap: wrap; }
.group { display: inline-flex; margin-right: 12px; }
.group .card + .card, .pile .card + .card { margin-left: -34px; }
.small .card, .card.small { width: 40px; height: 57px; }
.pile { display: inline-flex; flex-wrap: wrap; max-width: 420px; }
.pile .card + .card { margin-left: -24px; }
.card.laying { outline: 3px solid var(--gold); outline-offset: -2px; border-radius: 6px; }
.card.lifted { transform: translateY(-10px); }
.empty { opacity: 0.6; font-style: italic; }
.middle { display: flex; gap: 28px; align-items: flex-end; margin: 10px 0; padding: 8px 0;
  border-top: 1px dashed #3d7a52; border-bottom: 1px dashed #3d7a52; }
.spot { display: flex; flex-direction: column; align-items: center; gap: 2px; }
.caption { font-size: 13px; max-width: 230px; }
"""


# --------------------------------------------------------------------------- the replay page
_REPLAY_CSS = """
main { display: grid; grid-template-columns: minmax(620px, 1fr) 360px; gap: 12px; padding: 12px; align-items: start; }
aside { display: flex; flex-direction: column; gap: 10px; min-width: 0; }
.controls { display: flex; gap: 6px; align-items: center; flex-wrap: wrap; }
#slider { width: 100%; }
#move-text { background: #f6f3e4; color: #111; border-radius: 8px; padding: 8px 10px; min-height: 92px; }
#move-text .head { font-weight: 700; }
#moves { position: relative; margin: 0; padding: 0 0 0 44px; max-height: max(200px, calc(100vh - 290px));
  overflow: auto; background: #0b1f13;
  border-radius: 8px; font-size: 13px; }
#moves li { cursor: pointer; padding: 1px 4px; }
#moves li:hover { background: #234; }
#moves li.current { background: var(--gold); color: #111; }
#moves li.current::marker { color: var(--gold); }
#result { font-weight: 600; }
.problem { color: #ffb0a0; }
.hint { font-size: 12px; opacity: 0.75; }
@media (max-width: 1000px) { main { grid-template-columns: 1fr; } }
"""

_REPLAY_JS = r"""
const INDEX = JSON.parse(document.getElementById("index").textContent);
const cache = {};
let game = null, step = 0;
function loadGame(i) {
  if (!(i in cache)) {
    const el = document.querySelector(`script[data-game="${i}"]`);
    cache[i] = el ? JSON.parse(el.textContent) : null;
    if (cache[i]) cache[i].steps.forEach((s, k, all) => { if (!("m" in s)) s.m = all[k - 1].m; });
  }
  return cache[i];
}
function sourceText(s, names) {
  return `${s.src === 1 ? "discarded" : "turned"} by ${names[s.o]}${s.p ? ", refused once" : ""}`;
}
function seatHtml(s, seat) {
  const names = game.names, toMove = s.ph !== 4 && s.t === seat;
  const hand = cardsOf(s.h[seat]), laying = s.ph === 1 && s.t === seat ? s.c : 0;
  const meldCards = [].concat(...s.m[seat]).sort((a, b) => a - b);
  let who = esc(names[seat]);
  if (toMove) who += ` &mdash; to move (${PHASES[s.ph]})`;
  if (s.ph === 4 && s.w === seat) who += " &mdash; won";
  const handCards = hand.map(c => {
    const lay = Math.floor(laying / 2 ** c) % 2 === 1;
    return cardSvg(c, lay ? "laying lifted" : "");
  }).join("");
  return `<div class="who${toMove ? " to-move" : ""}">${who}</div>` +
    `<div class="row"><div><div class="label">hand (${hand.length})</div>` +
    `<div class="hand" data-seat="${seat}" data-cards="${namesOf(hand)}">${handCards || EMPTY}</div></div>` +
    `<div><div class="label">meld (${meldCards.length})</div>` +
    `<div class="meld" data-seat="${seat}" data-cards="${namesOf(meldCards)}">${meldHtml(s.m[seat])}</div></div></div>`;
}
function middleHtml(s) {
  const names = game.names, dead = cardsOf(s.d);
  let face = `<span class="empty">none</span>`, caption = "";
  if (s.f >= 0) {
    face = cardSvg(s.f, s.ph === 1 ? "laying" : "");
    caption = s.ph === 1 ? `being melded by ${esc(names[s.t])}` +
      (s.c ? ` with ${namesOf(cardsOf(s.c))}` : "") : `${esc(sourceText(s, names))}; offered to ${esc(names[s.t])}`;
  }
  return `<div class="spot"><div id="stock" data-count="${s.k}">${s.k ? backSvg() : EMPTY}</div>` +
    `<div class="label">stock: ${s.k}</div></div>` +
    `<div class="spot"><div id="face" data-card="${s.f >= 0 ? cardName(s.f) : ""}">${face}</div>` +
    `<div class="label">face-up card</div></div><div class="caption">${caption}</div>` +
    `<div class="spot"><div id="dead" class="pile small" data-cards="${namesOf(dead)}">` +
    `${dead.map(c => cardSvg(c, "small")).join("") || EMPTY}</div>` +
    `<div class="label">dead pile (${dead.length})</div></div>`;
}
function moveHtml() {
  const n = game.moves.length;
  if (step === 0) return `<div class="head">deal (move 0 of ${n})</div><div>${esc(game.start)}</div>`;
  const m = game.moves[step - 1];
  let text = `<div class="head">move ${step} of ${n}: ${esc(game.names[m.s])}: ${esc(m.a)}</div>` +
    m.d.map(line => `<div>${esc(line)}</div>`).join("");
  if (step === n) {
    text += game.problem ? `<div class="problem">warning: ${esc(game.problem)}</div>`
      : `<div><b>end: ${esc(game.result)}</b></div>`;
    if (game.failure) text += `<div class="problem">${esc(game.failure)}</div>`;
  }
  return text;
}
function show() {
  const s = game.steps[step];
  const table = document.getElementById("table");
  table.dataset.game = game.index;
  table.dataset.step = step;
  table.innerHTML = `<div class="seat">${seatHtml(s, 1)}</div><div class="middle">${middleHtml(s)}</div>` +
    `<div class="seat">${seatHtml(s, 0)}</div>`;
  const text = document.getElementById("move-text");
  text.dataset.step = step;
  text.innerHTML = moveHtml();
  const slider = document.getElementById("slider");
  slider.max = game.moves.length;
  slider.value = step;
  document.getElementById("where").textContent = `${step} / ${game.moves.length}`;
  for (const li of document.querySelectorAll("#moves li.current")) li.classList.remove("current");
  const li = document.querySelector(`#moves li[data-step="${step}"]`);
  if (li) {  // keep it in view by scrolling the list only, never the page
    li.classList.add("current");
    const box = document.getElementById("moves");
    if (li.offsetTop < box.scrollTop) box.scrollTop = li.offsetTop;
    else if (li.offsetTop + li.offsetHeight > box.scrollTop + box.clientHeight) {
      box.scrollTop = li.offsetTop + li.offsetHeight - box.clientHeight;
    }
  }
  document.getElementById("prev").disabled = document.getElementById("first").disabled = step === 0;
  document.getElementById("next").disabled = document.getElementById("last").disabled = step === game.moves.length;
  history.replaceState(null, "", `#game=${game.index}&step=${step}`);
}
function go(k) { step = Math.max(0, Math.min(game.moves.length, k)); show(); }
function openGame(i, k = 0) {
  const g = loadGame(i);
  if (!g) return false;
  game = g;
  document.getElementById("game").value = String(i);
  const head = document.getElementById("result");
  head.textContent = `${game.names[0]} vs ${game.names[1]}: ${game.result}` +
    (game.forcing ? " (forcing variant)" : "");
  head.className = game.problem ? "problem" : "";
  document.getElementById("moves").innerHTML = `<li data-step="0" value="0">deal</li>` + game.moves.map((m, k) =>
    `<li data-step="${k + 1}" value="${k + 1}">${esc(game.names[m.s])}: ${esc(m.a)}</li>`).join("");
  go(k);
  return true;
}
function fromHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  const i = q.get("game"), k = parseInt(q.get("step") || "0", 10) || 0;
  if (i !== null && openGame(i, k)) return true;
  return false;
}
const picker = document.getElementById("game");
picker.innerHTML = INDEX.map(g => `<option value="${g.i}">${esc(g.label)}</option>`).join("");
picker.disabled = INDEX.length < 2;
picker.addEventListener("change", () => openGame(picker.value));
document.getElementById("first").onclick = () => go(0);
document.getElementById("prev").onclick = () => go(step - 1);
document.getElementById("next").onclick = () => go(step + 1);
document.getElementById("last").onclick = () => go(game.moves.length);
document.getElementById("slider").addEventListener("input", e => go(parseInt(e.target.value, 10)));
document.getElementById("moves").addEventListener("click", e => {
  const li = e.target.closest("li[data-step]");
  if (li) go(parseInt(li.dataset.step, 10));
});
document.addEventListener("keydown", e => {
  if (e.target.tagName === "SELECT" || e.altKey || e.ctrlKey || e.metaKey) return;
  const keys = {ArrowRight: step + 1, ArrowDown: step + 1, ArrowLeft: step - 1, ArrowUp: step - 1, Home: 0,
                End: game.moves.length};
  if (e.key in keys) { e.preventDefault(); go(keys[e.key]); }
  else if (e.key === "PageDown" || e.key === "PageUp") {  // next / previous game of the file
    e.preventDefault();
    const at = INDEX.findIndex(g => String(g.i) === String(game.index)) + (e.key === "PageDown" ? 1 : -1);
    if (at >= 0 && at < INDEX.length) openGame(INDEX[at].i);
  }
});
window.addEventListener("hashchange", () => {
  const q = new URLSearchParams(location.hash.slice(1));
  if (q.get("game") !== String(game.index) || parseInt(q.get("step") || "0", 10) !== step) fromHash();
});
if (!fromHash()) openGame(INDEX[0].i);
"""


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
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(title)}</title>",
            '<link rel="icon" href="data:,">',
            f"<style>{CARD_CSS}{_REPLAY_CSS}</style></head><body>",
            SUIT_SYMBOLS,
            f"<header><h1>{html.escape(title)}</h1>",
            f'<label>game <select id="game" aria-label="game ({count})"></select></label>',
            '<span id="result"></span></header>',
            '<main><section id="table" class="felt" aria-live="polite"></section>',
            "<aside>",
            '<div class="controls"><button id="first" title="start (Home)">&laquo;</button>'
            '<button id="prev" title="back one move (left arrow)">&#x25C0; back</button>'
            '<button id="next" title="forward one move (right arrow)">forward &#x25B6;</button>'
            '<button id="last" title="end (End)">&raquo;</button><span id="where"></span></div>',
            '<input id="slider" type="range" min="0" value="0" aria-label="jump to a move">',
            '<div id="move-text" aria-live="polite"></div>',
            '<div class="hint">keys: &larr; &rarr; step, Home / End, Page Up / Page Down change game; '
            "click a move to jump to it</div>",
            '<ol id="moves" start="0"></ol>',
            "</aside></main>",
            f'<script type="application/json" id="index">{json_for_script(index)}</script>',
            *blocks,
            f"<script>{CARD_JS}{_REPLAY_JS}</script>",
            "</body></html>",
        ]
    )


def write_replay_page(games: Sequence[RecordedGame], path: str | Path, title: str = "Conquian replay") -> int:
    """Write :func:`replay_page` to ``path``; returns its size in bytes."""
    text = replay_page(games, title)
    data = text.encode("utf-8")
    Path(path).write_bytes(data)
    return len(data)


__all__ = [
    "CARD_CSS",
    "CARD_JS",
    "SUIT_SYMBOLS",
    "ReplayError",
    "game_data",
    "game_label",
    "json_for_script",
    "replay_page",
    "replay_page_of",
    "state_row",
    "write_replay_page",
]
