"""The game record: one game as data, enough to replay it move by move, and its validating replay.

One format for every tool: :func:`conquian_arena.match.play_game` returns a
:class:`GameRecord`; a tournament (:mod:`conquian_arena.tournament`) writes one per line of
``games.jsonl`` with its schedule fields added; ``conquian-play --save`` appends the
person's game in it; the viewer (:mod:`conquian_arena.replay`) shows it.

A record is a JSON object with at least :data:`REQUIRED_FIELDS`: the deal (``hands``,
``stock`` top first, as card text), ``first``, ``rules`` (:meth:`conquian_env.rules.Rules.to_dict`;
a record written before holds the older variant flag instead, and still loads), ``players`` (a name per seat)
and ``actions`` (every decision as text, in order).  ``winner`` (seat or null),
``moves``, ``failure`` (``{"seat", "kind", "message"}``, kind one of
:data:`FAILURE_KINDS`) and any other keys (``index``, ``pair``, ``seats`` ...) are
tolerated.

:func:`replay_states` replays a record on the engine (every action must be legal);
:func:`result_problem` says whether the recorded result is where those moves lead.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from conquian_env.actions import action_to_str, str_to_action
from conquian_env.game import GameState, IllegalActionError, new_game
from conquian_env.rules import Rules, rules_of_record

#: the fields a record must have to be replayed
REQUIRED_FIELDS = ("hands", "stock", "first", "rules", "players", "actions")
#: how a game can end other than by the rules: a bot that raised, a bot that answered
#: something illegal, a player who gave up (:class:`agents.base.Resign`)
FAILURE_KINDS = ("crash", "illegal", "quit")


@dataclass
class GameRecord:
    """One game: enough to replay it move by move."""

    hands: list[list[str]]  # the deal: ten cards per seat
    stock: list[str]  # twenty cards, top first
    first: int  # seat that played first
    rules: Rules  # the variant; to_dict() writes Rules.to_dict()
    players: list[str]  # bot name per seat
    actions: list[str] = field(default_factory=list)  # every decision as text, in order
    winner: int | None = None  # seat that won, None for a draw or an unfinished game
    moves: int = 0
    failure: dict[str, Any] | None = None  # {"seat", "kind": one of FAILURE_KINDS, "message"}
    think_time: list[float] = field(default_factory=lambda: [0.0, 0.0])  # seconds per seat
    decisions: list[int] = field(default_factory=lambda: [0, 0])
    max_think: list[float] = field(default_factory=lambda: [0.0, 0.0])  # longest decision, seconds

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GameRecord:
        """Build from a dict such as a games.jsonl line; extra keys (index, pair, ...) are ignored."""
        names = {f.name for f in fields(cls)}
        missing = [n for n in REQUIRED_FIELDS if n not in data and n != "actions"]
        if missing:
            raise ValueError(f"game record lacks field(s) {missing}")
        kept = {k: v for k, v in data.items() if k in names}
        kept["rules"] = rules_of_record(data, "game record")
        return cls(**kept)

    def replay(self) -> list[GameState]:
        """States after the deal and after every action (validates the whole record).

        Raises :class:`ReplayError` (a ``ValueError``) naming the move number and action
        of the first impossible step.
        """
        states, _ = replay_states(RecordedGame(index=0, line=0, data=self.to_dict()))
        return states


#: characters a terminal acts on rather than shows: C0 and C1 controls (escape sequences that
#: retitle the window or clear the screen), DEL, and the bidirectional overrides and isolates
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str, keep_lines: bool = False) -> str:
    """``text`` safe to print: every control character (an escape sequence's ESC, BEL, a
    carriage return, a bidi override ...) shown as its escape (``\\x1b``); with
    ``keep_lines``, newlines and tabs are kept (multi-line output)."""
    pattern = _CONTROL_KEEP_LINES if keep_lines else _CONTROL
    return pattern.sub(lambda m: repr(m.group())[1:-1] if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


class ReplayError(ValueError):
    """A record that cannot be replayed: impossible deal or an illegal or unknown action."""


@dataclass
class RecordedGame:
    """One record of a file, with the index a viewer selects it by and its line number."""

    index: int
    line: int
    data: dict[str, Any]

    @property
    def players(self) -> list[str]:
        """Seat labels of a tournament (``seats``) when present, else the bot names (``players``)."""
        seats = self.data.get("seats")
        if isinstance(seats, list) and len(seats) == 2 and all(isinstance(x, str) for x in seats):
            return [printable(x) for x in seats]
        return [printable(str(p)) for p in self.data["players"]]

    @property
    def names(self) -> tuple[str, str]:
        """Seat labels for tables: ``"p0 random"``, ``"p1 greedy"``."""
        p = self.players
        return (f"p0 {p[0]}", f"p1 {p[1]}")

    @property
    def actions(self) -> list[str]:
        return self.data["actions"]

    def result_text(self) -> str:
        """The recorded result: ``"p1 greedy won"``, ``"draw"``, plus a failure if any."""
        winner = self.data.get("winner")
        failure = self.data.get("failure")
        text = "draw" if winner is None else f"{self.names[winner]} won" if winner in (0, 1) else f"winner {winner!r}"
        if failure:
            seat = failure.get("seat") if isinstance(failure, dict) else None
            kind = failure.get("kind", "failure") if isinstance(failure, dict) else "failure"
            who = self.names[seat] if seat in (0, 1) else "a player"
            text += f" ({who} lost by {kind})"
        return printable(text)


def check_record(data: Any) -> str | None:
    """Why ``data`` is not a game record, or None when its fields have the right shape."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    missing = [k for k in REQUIRED_FIELDS if k not in data]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    hands, players, actions = data["hands"], data["players"], data["actions"]
    if not (isinstance(hands, list) and len(hands) == 2 and all(isinstance(h, list) for h in hands)):
        return "'hands' must be a list of two lists of cards"
    if not isinstance(data["stock"], list):
        return "'stock' must be a list of cards"
    if data["first"] not in (0, 1) or isinstance(data["first"], bool):
        return f"'first' must be 0 or 1, got {data['first']!r}"
    try:
        rules_of_record(data, "the record")
    except ValueError as err:
        return str(err)
    if not (isinstance(players, list) and len(players) == 2):
        return "'players' must be a list of two names"
    if not (isinstance(actions, list) and all(isinstance(a, str) for a in actions)):
        return "'actions' must be a list of action texts"
    winner = data.get("winner")
    if winner is not None and (winner not in (0, 1) or isinstance(winner, bool)):
        return f"'winner' must be 0, 1 or null, got {winner!r}"
    return None


def load_records(path: str | Path) -> tuple[list[RecordedGame], list[str]]:
    """The good records of a ``games.jsonl`` file and a message per corrupt line (skipped).

    ``path`` may be a folder holding ``games.jsonl``.  Records are numbered by their
    ``index`` field when every record has a distinct one (a tournament writes games as
    they finish), otherwise by their position among the good lines, from 0.  Raises
    ``OSError`` when the file cannot be read.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "games.jsonl"
    games: list[RecordedGame] = []
    problems: list[str] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as err:
                problems.append(f"{path}, line {line_no}: corrupt, skipped (not valid JSON: {err.msg})")
                continue
            except ValueError as err:  # a number longer than Python reads (its int-string limit)
                problems.append(f"{path}, line {line_no}: corrupt, skipped (a number too long to read: "
                                f"{str(err)[:60]})")  # fmt: skip
                continue
            except RecursionError:
                problems.append(f"{path}, line {line_no}: corrupt, skipped (nested too deeply)")
                continue
            why = check_record(data)
            if why:
                problems.append(f"{path}, line {line_no}: corrupt, skipped ({why})")
                continue
            games.append(RecordedGame(len(games), line_no, data))
    ids = [g.data.get("index") for g in games]
    if games and all(isinstance(i, int) and not isinstance(i, bool) for i in ids) and len(set(ids)) == len(ids):
        for g in games:
            g.index = g.data["index"]
        games.sort(key=lambda g: g.index)
    return games, problems


def replay_states(game: RecordedGame) -> tuple[list[GameState], list[int]]:
    """The states after the deal and after every move, and the action ids.

    Raises :class:`ReplayError` naming the move number (from 1) and the action when the
    record's deal or one of its actions is impossible.
    """
    data = game.data
    try:
        rules = rules_of_record(data, "the record")
        state = new_game(hands=data["hands"], stock=data["stock"], first=data["first"], rules=rules)
    except ValueError as err:
        raise ReplayError(f"game {game.index} (line {game.line}): impossible deal: {err}") from None
    states = [state.clone()]
    ids: list[int] = []
    for move, text in enumerate(game.actions, 1):
        where = f"game {game.index} (line {game.line}), move {move}"
        try:
            action = str_to_action(text)
        except ValueError as err:
            raise ReplayError(f"{where}: {text!r} is not an action ({err})") from None
        if state.is_terminal():
            raise ReplayError(f"{where}: action {text!r} comes after the end of the game")
        try:
            state.apply(action)
        except IllegalActionError:
            legal = ", ".join(action_to_str(a) for a in state.legal_actions())
            player = game.names[state.player]
            raise ReplayError(f"{where}: action {text!r} by {player} is illegal here; legal moves: {legal}") from None
        ids.append(action)
        states.append(state.clone())
    return states, ids


def result_problem(game: RecordedGame, final: GameState) -> str | None:
    """Why the recorded result (``winner``, ``failure``, ``moves``) is not where the recorded
    moves lead (``final``: the last state of :func:`replay_states`), or None when it is.

    A game without a failure must end by the rules with the recorded winner; a forfeit
    must stop an unfinished game and make the other seat the winner.
    """
    data = game.data
    failure, winner = data.get("failure"), data.get("winner")
    if failure is None:
        if not final.is_terminal():
            return f"the record ends before the game is over (after {final.move_count} moves)"
        replayed = None if final.winner < 0 else final.winner
        if winner != replayed:
            shown = "draw" if replayed is None else f"{game.names[replayed]} won"
            return f"the record says {game.result_text()} but the moves give {shown}"
    else:
        seat = failure.get("seat") if isinstance(failure, dict) else None
        if seat not in (0, 1) or isinstance(seat, bool) or failure.get("kind") not in FAILURE_KINDS:
            return f"the record has a malformed failure {failure!r}"
        if final.is_terminal():
            return f"the record says {game.result_text()} but the moves end the game by the rules"
        if winner != 1 - seat:
            return f"the record says {game.result_text()} but a forfeit by {game.names[seat]} makes the other seat win"
    moves = data.get("moves", len(game.actions))
    if moves != len(game.actions):
        return f"the record counts {moves!r} moves but holds {len(game.actions)} actions"
    return None
