"""A tournament's ``games.jsonl`` read back on a resume: every line checked, the bad ones set aside.

:func:`load_games` keeps a line only when its check is the run's (:mod:`conquian_arena.runfiles`),
:func:`check_game_line` finds it faithful to the schedule, the rules and its replay, and (for a
failure, or with ``--verify``) re-playing the game reproduces it; any other line is moved to
``games.rejected.txt`` with a :class:`ResumeWarning`, and its game is played again.  What this
can and cannot detect: docs/tournaments.md.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.model_files import strict_loads
from conquian_env.actions import action_to_str
from conquian_env.rules import Rules

from . import runfiles, worker
from .match import deal_for_seed
from .record import FAILURE_KINDS, GameRecord, RecordedGame, ReplayError, check_record, replay_states, result_problem
from .schedule import bot_names, bot_seeds, make_schedule
from .worker import SCHEDULE_KEYS, Task, play_task, schedule_fields

#: every field of a games.jsonl line
LINE_KEYS = SCHEDULE_KEYS + tuple(f.name for f in dataclasses.fields(GameRecord)) + ("winner_label",)


class ResumeWarning(UserWarning):
    """A line of games.jsonl could not be used; its game will be played again."""


#: the thinking time of one seat in one game may not exceed this (seconds: a day); a line
#: with more is set aside (timings are measured, so only their range can be checked)
MAX_THINK_SECONDS = 86400.0


#: the fields a resume cannot check against the replay, only for their range
TIMING_KEYS = ("think_time", "max_think")


def _same(value: Any, expected: Any) -> bool:
    """Equal as JSON: ``1.0`` is not ``1`` and ``true`` is not ``1`` (as they would be in Python)."""
    return json.dumps(value, sort_keys=True) == json.dumps(expected, sort_keys=True)


def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _timing_problem(obj: dict[str, Any], decisions: list[int]) -> str | None:
    """Why ``think_time`` / ``max_think`` are impossible for ``decisions``, or None: two finite
    numbers each, ``0 <= max_think <= think_time <= decisions * max_think``, under a day."""
    for key in TIMING_KEYS:
        value = obj[key]
        if not (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        ):
            return f"a malformed {key!r} ({_shown(value)}: two numbers of seconds expected)"
        if not all(math.isfinite(v) and 0 <= v <= MAX_THINK_SECONDS for v in value):
            return f"an impossible {key!r} ({_shown(value)}: seconds between 0 and {MAX_THINK_SECONDS:g} expected)"
    for seat in (0, 1):
        total, longest, n = obj["think_time"][seat], obj["max_think"][seat], decisions[seat]
        if longest > total * (1 + 1e-9) + 1e-12 or total > n * longest * (1 + 1e-9) + 1e-12:
            return (
                f"impossible timings for seat {seat} ({n} decisions, {total!r} s in all, {longest!r} s "
                "the longest: the longest is at most the total, the total at most decisions times the longest)"
            )
    return None


def check_game_line(obj: dict[str, Any], task: Task, rules: Rules, players: Sequence[str]) -> str | None:
    """Why a games.jsonl object is not a faithful record of ``task``'s game, or None.

    Every field of :data:`LINE_KEYS` must be there and no other.  The schedule's fields
    (:func:`schedule_fields`), the deal and ``players`` (the bots' names) must be the
    schedule's, compared as JSON (``1.0`` is not ``1``), and the rules the tournament's, read
    by :meth:`~conquian_env.rules.Rules.from_dict` (a field left out is off: the line was
    written before that variant existed; an unknown field is refused).  The game is replayed: every
    action legal and written as the engine writes it, and the recorded result (winner,
    failure, moves, winner label) the one the replay reaches
    (:func:`conquian_arena.record.result_problem`); ``decisions`` must count the moves of
    each seat (plus the failing decision); the timings must be possible
    (:func:`_timing_problem`).  What the rules cannot confirm is a failure: :func:`load_games`
    re-plays those games with the bots.
    """
    unknown = [k for k in obj if k not in LINE_KEYS]
    if unknown:
        return f"unknown field(s) {', '.join(_shown(k) for k in unknown)}"
    missing = [k for k in LINE_KEYS if k not in obj]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    hands, stock = deal_for_seed(task.deal_seed)
    expected = {**schedule_fields(task), "hands": hands, "stock": stock, "first": 0, "players": list(players)}
    for key, value in expected.items():
        if not _same(obj[key], value):
            return f"a {key!r} that differs from the schedule ({_shown(obj[key])} instead of {_shown(value)})"
    try:  # a field left out is off: the line was written before that variant existed
        same_rules = Rules.from_dict(obj["rules"], "its 'rules'") == rules
    except ValueError as err:
        return f"rules this version does not read ({err})"
    if not same_rules:
        return f"a 'rules' that differs from the schedule ({_shown(obj['rules'])} instead of {_shown(rules.to_dict())})"
    shape = check_record(obj)
    if shape is not None:
        return shape
    game = RecordedGame(index=task.index, line=0, data=obj)
    try:
        states, ids = replay_states(game)
    except ReplayError as err:
        return f"a game that does not replay ({err})"
    for move, (text, action) in enumerate(zip(obj["actions"], ids, strict=True), 1):
        if text != action_to_str(action):
            return f"move {move} written {_shown(text)}, not as the engine writes it ({action_to_str(action)!r})"
    failure = obj["failure"]
    if failure is not None and not (
        isinstance(failure, dict)
        and sorted(failure) == ["kind", "message", "seat"]
        and type(failure["seat"]) is int
        and failure["seat"] in (0, 1)
        and failure["kind"] in FAILURE_KINDS
        and isinstance(failure["message"], str)
    ):
        return f"a malformed failure {_shown(failure)} (expected seat 0 or 1, kind one of {FAILURE_KINDS}, message)"
    problem = result_problem(game, states[-1])
    if problem is not None:
        return f"a record whose result is not where its moves lead ({problem})"
    final = states[-1]
    winner = (None if final.winner < 0 else final.winner) if failure is None else 1 - failure["seat"]
    result = {"winner": winner, "moves": len(ids), "winner_label": None if winner is None else task.seats[winner]}
    for key, value in result.items():
        if not _same(obj[key], value):
            return f"a {key!r} that differs from the replay ({_shown(obj[key])} instead of {_shown(value)})"
    moved = [sum(1 for s in states[:-1] if s.player == seat) for seat in (0, 1)]
    allowed = [moved]
    if failure is not None:  # the failing decision counts too, unless the bot failed in reset (before any move)
        allowed = [[n + (seat == failure["seat"]) for seat, n in enumerate(moved)]] + ([moved] if not ids else [])
    if not any(_same(obj["decisions"], d) for d in allowed):
        return f"a 'decisions' that differs from the replay ({_shown(obj['decisions'])} instead of {allowed[0]})"
    return _timing_problem(obj, obj["decisions"])


def _replay_problem(obj: dict[str, Any], task: Task, config: dict[str, Any], what: str = "a failure") -> str | None:
    """Re-play ``task``'s game with the bots (a forfeit is a bot's doing, which the rules cannot
    confirm; with ``--verify`` every game) and say how ``obj`` differs from it, or None when it
    is that game.  ``what``: how the message names the line."""
    spec_of = dict(zip(config["labels"], config["bot_specs"], strict=True))
    worker.ensure_setup(spec_of, bot_seeds(config), config["rules"])  # the bots are built once, as in a worker
    fresh = play_task(task)
    differ = [k for k in LINE_KEYS if k not in TIMING_KEYS and not _same(obj[k], fresh[k])]
    if differ:
        return (
            f"{what} that re-playing the game does not reproduce "
            f"(the re-played game differs in {', '.join(differ)}: {game_outcome(fresh)})"
        )
    return None


def game_outcome(line: dict[str, Any]) -> str:
    failure = line.get("failure")
    if failure:
        return f"{line['seats'][failure['seat']]} {failure['kind']} after {line['moves']} moves"
    winner = line.get("winner_label")
    return f"{'a draw' if winner is None else winner + ' won'} after {line['moves']} moves"


def load_games(
    path: Path, config: dict[str, Any], names: dict[str, str] | None = None, *, verify: bool = False
) -> dict[tuple, dict[str, Any]]:
    """Games already in ``path`` that belong to the tournament ``config``
    (:func:`conquian_arena.tournament.make_config`), keyed by (A, B, deal, swap), each without its ``check``.

    A line is kept only when its check is this run's (:func:`conquian_arena.runfiles.check_problem`,
    keyed by the folder's :data:`~conquian_arena.runfiles.KEY_FILE`), :func:`check_game_line`
    finds it faithful (the schedule, the rules, the result; ``names``, the bots' names by
    label, default :func:`bot_names`) and, when it records a failure (a crash, an illegal
    answer, a bot's quit) or ``verify`` is set, re-playing the game with the scheduled bots
    and seeds gives the same game (every field but the timings).  Corrupt, half-written (the
    last line cut short by a kill), unchecked, foreign, repeated or unfaithful lines, and games
    the re-play does not reproduce (a bot whose play is not a function of its seed), are
    reported (with their line number and why), moved to ``games.rejected.txt`` and left out,
    so their games are played again; the file is rewritten (atomically) with only the good
    lines so new lines append cleanly.

    A folder without a key file gets one; if its ``games.jsonl`` has lines (a folder written
    before lines were checked, or whose key was deleted) they cannot be checked: a
    ``ValueError`` says so, unless ``verify``, which re-plays every line, keeps those that
    come out the same and signs them with the new key.
    """
    folder = path.parent
    key = runfiles.read_key(folder)
    raw = runfiles.read_bytes(path) if runfiles.check_entry(path) else b""
    unsigned = key is None and bool(raw.strip())
    if unsigned and not verify:
        raise ValueError(
            f"{folder} has games in games.jsonl but no {runfiles.KEY_FILE}, the key that checks them (a folder "
            "written before games were checked, or its key was deleted): resume with --verify to re-play and "
            "check every game (bots whose play is a function of their seed), or choose another --out"
        )
    if key is None:
        key = runfiles.new_key()
        if not unsigned:
            runfiles.write_key(folder, key)
    if not raw:
        return {}
    tasks = make_schedule(config)
    rules = config["rules"]
    names = bot_names(config) if names is None else names
    chunks = raw.split(b"\n")
    torn = not raw.endswith(b"\n")  # the last line was cut short (a kill while it was written)
    good: dict[tuple, dict[str, Any]] = {}
    good_lines: list[bytes] = []
    rejected: list[bytes] = []
    for lineno, chunk in enumerate(chunks, 1):
        if not chunk.strip():
            continue
        problem = None
        try:
            obj = strict_loads(chunk)
            if not isinstance(obj, dict):
                raise ValueError(f"a JSON {type(obj).__name__}, not an object")
            if unsigned:
                obj.pop(runfiles.CHECK_FIELD, None)  # a key lost: the re-play is the check
            else:
                problem = runfiles.check_problem(chunk, key)
                if problem is None:
                    del obj[runfiles.CHECK_FIELD]
            index = obj.get("index")
            if problem is not None:
                pass
            elif type(index) is not int or not 0 <= index < len(tasks):
                problem = f"a game that is not in this tournament's schedule (index {_shown(index)})"
            elif tasks[index].key in good:
                problem = f"a repeat of game {index}"
            else:
                task = tasks[index]
                problem = check_game_line(obj, task, rules, [names[s] for s in task.seats])
                if problem is None and obj["failure"] is not None:
                    problem = _replay_problem(obj, task, config)
                elif problem is None and verify:
                    problem = _replay_problem(obj, task, config, what="a game (--verify)")
        except (ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError, RecursionError) as err:
            problem = f"corrupt or half-written ({type(err).__name__}: {str(err)[:80]})"
            if torn and lineno == len(chunks):
                problem = "corrupt or half-written (the file's last line, cut short when the run stopped writing it)"
        if problem is not None:
            # a repeat's game is kept (its first line): only a game with no good line is played again
            repeat = problem.startswith("a repeat")
            then = "the game's first line is kept" if repeat else "its game will be played again"
            warnings.warn(
                f"{path}: line {lineno} is {problem}; skipped (moved to games.rejected.txt), {then}",
                ResumeWarning,
                stacklevel=2,
            )
            reason = re.sub(r"[\x00-\x1f\x7f]", " ", problem).encode("utf-8", "replace")
            rejected.append(b"line %d\t%s\t%s" % (lineno, reason, chunk))
            continue
        good[tasks[index].key] = obj
        good_lines.append(runfiles.sign_line(json.dumps(obj), key).encode("ascii") if unsigned else chunk)
    if rejected or torn or unsigned:
        if rejected:  # whole or not at all; an entry a killed resume wrote already is not repeated
            old = folder / "games.rejected.txt"
            kept = runfiles.read_bytes(old) if runfiles.check_entry(old) else b""
            entries = set(kept.split(b"\n"))
            fresh = b"".join(line + b"\n" for line in rejected if line not in entries)
            runfiles.write_bytes(old, kept + fresh)
        runfiles.write_bytes(path, b"".join(line + b"\n" for line in good_lines))
    if unsigned:  # the lines are signed with it now
        runfiles.write_key(folder, key)
    return good
