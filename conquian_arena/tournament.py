"""Head-to-head tournaments between Conquian bots, with statistics a reviewer can check.

Usage (``conquian-evaluate`` is the installed command; ``python evaluate.py`` in the
repository and ``python -m conquian_arena.tournament`` are the same)::

    conquian-evaluate greedy random --games 200 -j 2                   # a few seconds
    conquian-evaluate random pimc:iterations=100 --gauntlet greedy --games 40
    conquian-evaluate greedy random --games 200 --out results/x -j 4   # a variant: its flag (conquian_env.rules)

Every knob is a field of :class:`TournamentConfig` (the command line is generated from
it; ``--help`` lists them and the bot specs).  From Python::

    from conquian_arena.tournament import TournamentConfig, run_tournament
    summary = run_tournament(TournamentConfig(specs=["greedy", "random"], games=100))
    summary = run_tournament(["greedy", "random"], games=100)      # the same

How games are scheduled
    Each pair of bots plays ``--games`` games.  By default deals are **duplicated**: deal
    ``d`` is played twice, once with each bot in seat 0, so both bots get each hand and
    each playing position once and the luck of the cards cancels (``--games`` is rounded
    up to even).  Seat 0 always plays first (RULES.md section 3).  With
    ``--no-duplicate`` every game gets a fresh deal and the seats alternate.  Deal ``d``
    is shuffled from a seed derived from ``(--seed, d)``; it is the same deal for every
    pair (common random numbers).  Bots are built once per worker process from their
    specs and re-seeded before every game with a seed derived from ``(--seed, d, seat
    swap)``, so the tournament is reproducible for any ``-j`` and any scheduling order,
    as long as each bot's play depends only on the seed given to ``Agent.reset``.

Statistics (all intervals 95% by default, ``--confidence``): :mod:`conquian_arena.stats`
    score of A against B with a t interval over deals, stakes (RULES.md section 6) with a
    regenerative interval, Bradley-Terry ratings on the Elo scale (``--bt-prior`` virtual
    draws per pair, ``--anchor BOT`` at 0) with bootstrap intervals over deals
    (``--bootstrap`` resamples).  Reports: :mod:`conquian_arena.report`.

Output folder (``--out``, default ``results/<bots>_g<games>_s<seed>``)
    ``config.json``    what defines the tournament (specs, games, seed, rules, duplicate);
                       re-running with the same folder resumes, a different config is an error.
                       Its ``options`` are the :class:`TournamentConfig` of the latest run.
    ``games.jsonl``    one JSON object per game, written and flushed as each game ends:
                       ``index pair deal swap seats specs deal_seed game_seed hands stock first
                       rules players actions winner winner_label moves failure think_time max_think
                       decisions`` (:class:`conquian_arena.record.GameRecord` fields plus
                       the schedule) and last ``check``, the line's HMAC keyed by ``games.key``
                       (:mod:`conquian_arena.runfiles`).  On a resume every line's check is
                       verified and every line is checked field by field against the schedule
                       and its replay (:func:`check_game_line`); a game that ended by a failure
                       (crash, illegal, quit), or with ``--verify`` every game, is re-played
                       with the bots, which must reproduce it (:func:`load_games`); a corrupt,
                       half-written, unchecked, unfaithful or unreproduced line is reported,
                       moved to ``games.rejected.txt`` (``line N<TAB>why<TAB>the line``) and
                       its game played again.  What this can and cannot detect:
                       docs/tournaments.md.
    ``games.key``      the run's secret that signs the lines (its owner's only).
    ``summary.json``   the statistics with their methods, ``summary.csv`` one row per pair,
    ``ratings.csv``    one row per bot, ``summary.png`` score matrix and ratings.
    ``report.html``    the tables, the plot and a link to every game's replay in ``replays/``
                       (self-contained pages, one per pair of bots; ``--no-html`` skips them).
    ``run.lock``       held while a run works in the folder: a second run stops, naming the holder.
    Every file is written through :mod:`conquian_arena.runfiles`, the run-folder library of
    training too: whole or absent, never through a symbolic link (a link, a FIFO in the folder is
    refused in one line naming it).
    Only ``timing`` (seconds of thinking) in ``summary.json`` and ``think_time`` / ``max_think``
    in ``games.jsonl`` differ between reruns.

A Ctrl-C or a kill keeps every game played so far (each is written as it ends; every other
file is written whole or not at all); the same command resumes the tournament.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import math
import os
import re
import sys
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.base import Agent
from agents.registry import SpecError, describe_bots, make_agent
from conquian_env.actions import action_to_str
from conquian_env.extras import MissingExtraError, for_command
from conquian_env.rules import STANDARD, Rules, resolve, rules_of_record
from conquian_env.seeding import TOURNAMENT_BOT, TOURNAMENT_DEAL, TOURNAMENT_GAME, derive_seed

from . import knobs, runfiles, worker
from .knobs import add_flags, knob
from .match import deal_for_seed
from .record import (
    FAILURE_KINDS,
    GameRecord,
    RecordedGame,
    ReplayError,
    check_record,
    replay_states,
    result_problem,
)
from .report import format_summary, plot_summary, write_html_report, write_summary
from .stats import summarize
from .worker import SCHEDULE_KEYS, Task, play_task, schedule_fields

FORMAT_VERSION = 1
#: every field of a games.jsonl line
LINE_KEYS = SCHEDULE_KEYS + tuple(f.name for f in dataclasses.fields(GameRecord)) + ("winner_label",)


# --------------------------------------------------------------------------- the knobs


@dataclass
class TournamentConfig:
    """Every knob of a tournament.  The command line is generated from these fields
    (:func:`build_parser`), and ``config.json`` keeps them (``options``) with the run."""

    specs: list[str] = knob([], "bot specs, e.g. greedy random pimc:iterations=200", positional=True, spec=True)
    gauntlet: str | None = knob(
        None, "play only SPEC against each listed bot instead of a round robin", type=str, metavar="SPEC", spec=True
    )
    games: int = knob(1000, "games per pair (rounded up to even with duplicate deals)", low=1)
    seed: int = knob(0, "tournament seed: deals and bot seeds derive from it", low=0)
    jobs: int | None = knob(None, "worker processes (default: one per core)", type=int, flags=("-j", "--jobs"), low=1)
    rules: Rules = knob(STANDARD, "the rule variant: one flag per field of conquian_env.rules.Rules", rules=True)
    duplicate: bool = knob(True, "each deal twice with the seats swapped (--no-duplicate: a fresh deal for every game)")
    out: str | Path | None = knob(None, "results folder (default: results/<bots>_g<games>_s<seed>)", type=str)
    confidence: float = knob(0.95, "level of every interval", above=0, below=1)
    bootstrap: int = knob(1000, "bootstrap resamples for rating intervals", low=1)
    bt_prior: float = knob(1.0, "virtual draws added to each pair in the Bradley-Terry fit (0 = plain MLE)", low=0)
    anchor: str | None = knob(None, "bot label rated 0 Elo (default: mean 0)", type=str, metavar="BOT")
    progress: bool | None = knob(None, "progress bar on standard error (default: when it is a terminal)")
    plot: bool = knob(True, "write summary.png (needs matplotlib)")
    html: bool = knob(True, "write report.html and replays/: the report and every game's replay, for a browser")
    verify: bool = knob(
        False,
        "on a resume, re-play every kept game with its scheduled bots and seeds, and set aside (and play again) "
        "any that comes out otherwise: for bots whose play is a function of their seed; it costs the games' time",
    )
    ray: str | None = knob(
        None,
        "play the games as Ray tasks: --ray local starts a local Ray instance with --jobs CPUs, "
        "--ray ADDRESS joins a cluster (e.g. auto, ray://HOST:10001); same games, results and resume",
        type=str,
        metavar="ADDRESS",
    )

    def validate(self) -> None:
        """Raise ``ValueError`` saying what is wrong with a knob: each field against its type and
        declared range (:func:`conquian_arena.knobs.check`: ``games must be a positive integer, got
        0``), then what the fields ask of each other."""
        knobs.check(self)
        if self.gauntlet is None and len(self.specs) < 2:
            raise ValueError(f"a round robin needs at least two bots, got {self.specs}; or use --gauntlet SPEC")

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["out"] = None if self.out is None else str(self.out)
        return data


def build_parser() -> argparse.ArgumentParser:
    """The command line, one option per :class:`TournamentConfig` field (:func:`conquian_arena.knobs.add_flags`,
    every default in the namespace)."""
    parser = argparse.ArgumentParser(
        description="Round robin (or gauntlet) tournament between Conquian bots, with duplicate deals, "
        "confidence intervals, stakes and Bradley-Terry ratings.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="bot specs:\n" + describe_bots(),
    )
    return add_flags(parser, TournamentConfig, defaults_in_namespace=True)


# --------------------------------------------------------------------------- schedule and seeds


def deal_seed(seed: int, deal: int) -> int:
    return derive_seed(seed, TOURNAMENT_DEAL, deal)


def game_seed(seed: int, deal: int, swap: int) -> int:
    return derive_seed(seed, TOURNAMENT_GAME, deal, swap)


def short_name(spec: str) -> str:
    """A table-friendly name: ``python:pkg.mod:Class,k=v`` -> ``Class,k=v``; ``ppo:dir/m.zip`` -> ``ppo:m.zip``;
    ``exec:dir/bot,time=1`` -> ``exec:bot,time=1``."""
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if kind.lower() == "python":
        return rest.partition(":")[2] or spec
    if kind.lower() == "exec" and rest:
        path, comma, params = rest.partition(",")
        return f"exec:{Path(path).name or path}{comma}{params}"
    if kind.lower() == "ppo":
        path, comma, params = rest.partition(",")
        if "=" in path and not path.startswith("path="):  # no path: the shipped model
            path, comma, params = "", ",", rest
        if not path:
            return f"ppo{comma}{params}"
        return f"ppo:{Path(path.removeprefix('path=')).name}{comma}{params}"
    return spec


def bot_labels(specs: list[str]) -> list[str]:
    """Unique names for the bots (:func:`short_name`), with ``#2``, ``#3`` for repeats (``random random``)."""
    labels, seen = [], defaultdict(int)
    for spec in specs:
        name = short_name(spec)
        seen[name] += 1
        labels.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return labels


def games_per_pair(games: int, duplicate: bool) -> int:
    return games + (games % 2) if duplicate else games


def make_schedule(config: dict[str, Any]) -> list[Task]:
    """All games of the tournament in a fixed order (pair by pair, deal by deal)."""
    labels, specs = config["labels"], config["bot_specs"]
    spec_of = dict(zip(labels, specs, strict=True))
    if config["gauntlet"] is not None:
        pairs = [(labels[0], other) for other in labels[1:]]
    else:
        pairs = [(labels[i], labels[j]) for i in range(len(labels)) for j in range(i + 1, len(labels))]
    tasks = []
    for a, b in pairs:
        for k in range(config["games"]):
            deal = k // 2 if config["duplicate"] else k
            swap = k % 2
            seats = (a, b) if swap == 0 else (b, a)
            tasks.append(
                Task(
                    index=len(tasks),
                    pair=(a, b),
                    deal=deal,
                    swap=swap,
                    seats=seats,
                    specs=(spec_of[seats[0]], spec_of[seats[1]]),
                    deal_seed=deal_seed(config["seed"], deal),
                    game_seed=game_seed(config["seed"], deal, swap),
                )
            )
    return tasks


# --------------------------------------------------------------------------- one pair (training's evaluation)


def play_pair(
    a: Agent | str,
    b: str,
    games: int,
    seed: int,
    *,
    rules: Rules | None = None,
    jobs: int = 1,
    a_batch: Any = None,
) -> list[dict[str, Any]]:
    """The games of ``conquian-evaluate A B --games GAMES --seed SEED`` (duplicate deals, A in
    seat 0 of swap 0), each as ``deal swap deal_seed game_seed moves score``, ``score`` A's
    (1 win, 1/2 draw, 0 loss), in the schedule's order.

    ``a`` is a bot spec or a bot object (a policy being trained: it is reset before every
    game like any bot); ``b`` a bot spec, built with the seed the tournament gives it.  With
    ``a_batch`` (A's batched form, :mod:`agents.batched`) and a batched form of ``b``, all the
    games run at once on the batched engine: the same deals and seats (a batched bot draws
    its random numbers its own way, so only deterministic bots play the very same games);
    otherwise game by game in ``jobs`` worker processes, exactly as the tournament plays them.
    ``rules``: the :class:`~conquian_env.rules.Rules` of the games (None: the standard game).
    """
    label_a = a if isinstance(a, str) else a.name
    rules = resolve(rules)
    config = make_config(TournamentConfig(specs=[label_a, b], games=games, seed=seed, rules=rules))
    tasks = make_schedule(config)
    labels = config["labels"]
    seeds = bot_seeds(config)
    if a_batch is not None:
        from agents.batched import PerGameOpponent, make_batch_opponent

        b_batch = make_batch_opponent(b, seeds[labels[1]])
        if not isinstance(b_batch, PerGameOpponent):
            return _play_pair_batched(tasks, a_batch, b_batch, rules)
    spec_of = {labels[0]: a, labels[1]: b}
    jobs = max(1, min(jobs, len(tasks)))
    if jobs == 1:
        worker.setup(spec_of, seeds, rules)
        lines = [play_task(t) for t in tasks]
    else:
        with worker.worker_pool(jobs, (spec_of, seeds, rules)) as pool:
            lines = pool.map(play_task, tasks)
    keys = ("deal", "swap", "deal_seed", "game_seed", "moves")
    return [
        {
            **{k: line[k] for k in keys},
            "score": 0.5 if line["winner"] is None else float(line["winner"] == line["swap"]),
        }
        for line in lines
    ]


def _play_pair_batched(tasks: list[Task], a_batch: Any, b_batch: Any, rules: Rules) -> list[dict[str, Any]]:
    """:func:`play_pair`'s games on the batched engine (A in seat ``swap``)."""
    import numpy as np

    from conquian_env.vector import deal_permutation

    from .batch import play_batch

    deals = np.stack([deal_permutation(*deal_for_seed(t.deal_seed)) for t in tasks])
    scores, moves = play_batch(a_batch, b_batch, deals, np.array([t.swap for t in tasks]), rules=rules)
    return [
        {"deal": t.deal, "swap": t.swap, "deal_seed": t.deal_seed, "game_seed": t.game_seed, "moves": int(m),
         "score": float(sc)}
        for t, m, sc in zip(tasks, moves, scores, strict=True)
    ]  # fmt: skip


def pair_score(games: list[dict[str, Any]], confidence: float = 0.95) -> dict[str, Any]:
    """A's record in :func:`play_pair`'s ``games``: wins, draws, losses, the score with its
    interval over deals (:func:`conquian_arena.stats.score_interval`) and the share of decided games won."""
    from .stats import score_interval

    per_deal: dict[int, list[float]] = {}
    for game in games:
        per_deal.setdefault(game["deal"], []).append(game["score"])
    wins = sum(1 for g in games if g["score"] == 1.0)
    losses = sum(1 for g in games if g["score"] == 0.0)
    interval = score_interval([sum(v) / len(v) for v in per_deal.values()], confidence, unit="deals")
    return {
        "games": len(games),
        "wins": wins,
        "draws": len(games) - wins - losses,
        "losses": losses,
        "score": interval.estimate,
        "low": interval.low,
        "high": interval.high,
        "decided_won": wins / (wins + losses) if wins + losses else math.nan,
    }


# --------------------------------------------------------------------------- games.jsonl


class ResumeWarning(UserWarning):
    """A line of games.jsonl could not be used; its game will be played again."""


#: the thinking time of one seat in one game may not exceed this (seconds: a day); a line
#: with more is set aside (timings are measured, so only their range can be checked)
MAX_THINK_SECONDS = 86400.0
#: the fields a resume cannot check against the replay, only for their range
TIMING_KEYS = ("think_time", "max_think")


def bot_seeds(config: dict[str, Any]) -> dict[str, int]:
    """The seed each bot (by label) is built with (:func:`agents.registry.make_agent`)."""
    return {label: derive_seed(config["seed"], TOURNAMENT_BOT, i) for i, label in enumerate(config["labels"])}


def bot_names(config: dict[str, Any]) -> dict[str, str]:
    """The ``name`` of each bot, by label: what a games.jsonl line's ``players`` holds.
    Builds every bot once (a bad spec raises :class:`~agents.registry.SpecError`)."""
    seeds = bot_seeds(config)
    return {
        label: make_agent(spec, seeds[label]).name
        for label, spec in zip(config["labels"], config["bot_specs"], strict=True)
    }


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


def _strict_json(chunk: bytes) -> Any:
    """One line as JSON, refusing what ``json.loads`` lets through: a repeated key, NaN, Infinity."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        if len(set(keys)) != len(keys):
            raise ValueError(f"a repeated key {_shown(next(k for k in keys if keys.count(k) > 1))}")
        return dict(items)

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    return json.loads(chunk.decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant)


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
    """Games already in ``path`` that belong to the tournament ``config`` (:func:`make_config`),
    keyed by (A, B, deal, swap), each without its ``check``.

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
            obj = _strict_json(chunk)
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


def make_config(options: TournamentConfig) -> dict[str, Any]:
    """What defines the tournament: a resume must ask for the same.  (config.json keeps it,
    as :func:`config_data`, with the ``options`` of the latest run, whose other knobs may change
    between runs.)  Its ``rules`` are the :class:`~conquian_env.rules.Rules` object itself, parsed
    once (from the command line or the options), which everything that plays or checks a game reads."""
    bot_specs = ([options.gauntlet] if options.gauntlet is not None else []) + list(options.specs)
    return {
        "format": FORMAT_VERSION,
        "specs": list(options.specs),
        "gauntlet": options.gauntlet,
        "bot_specs": bot_specs,
        "labels": bot_labels(bot_specs),
        "games": games_per_pair(options.games, options.duplicate),
        "games_requested": options.games,
        "seed": options.seed,
        "rules": options.rules,
        "duplicate": bool(options.duplicate),
    }


def config_data(config: dict[str, Any]) -> dict[str, Any]:
    """:func:`make_config`'s ``config`` as JSON data (its rules as their fields), as config.json keeps it."""
    return {**config, "rules": config["rules"].to_dict()}


def config_from_data(data: dict[str, Any]) -> dict[str, Any]:
    """The ``config`` of a folder's config.json (:func:`config_data`'s form), its rules parsed into the
    rules object once, as :func:`make_config` makes it."""
    return {**data, "rules": rules_of_record(data, "config")}


def default_out_dir(config: dict[str, Any]) -> Path:
    slug = "-".join(re.sub(r"[^A-Za-z0-9=.]+", "_", label).strip("_") for label in config["labels"])
    if config["gauntlet"] is not None:
        slug = "gauntlet-" + slug
    if len(slug) > 60:
        slug = slug[:50] + "-" + hashlib.sha1(slug.encode()).hexdigest()[:8]
    rules = config["rules"]
    extra = ("" if rules == STANDARD else "_" + rules.name) + ("" if config["duplicate"] else "_nodup")
    return Path("results") / f"{slug}_g{config['games']}_s{config['seed']}{extra}"


def _check_config(out_dir: Path, config: dict[str, Any]) -> None:
    path = out_dir / "config.json"
    if runfiles.check_entry(path):
        try:
            old = json.loads(runfiles.read_text(path))
        except runfiles.RunFolderError:
            raise
        except (ValueError, RecursionError) as err:  # bad UTF-8, bad JSON, absurd nesting
            raise ValueError(f"{path} is not valid JSON ({str(err)[:120]}); fix it or use another --out") from None
        if not isinstance(old, dict):
            raise ValueError(f"{path} is not a tournament's config: a JSON object expected, got a JSON "
                             f"{type(old).__name__}; fix it or use another --out")  # fmt: skip
        data = config_data(config)
        compare = [k for k in data if k != "games_requested"]
        # the rules as the rules object reads them: a field the folder leaves out is off (it was
        # written before that variant existed); a field this version does not know is refused by name
        same_rules = "rules" in old and rules_of_record(old, str(path)) == config["rules"]
        diff = [k for k in compare if (not same_rules if k == "rules" else old.get(k) != data[k])]
        if diff:
            details = "; ".join(f"{k}: folder has {old.get(k)!r}, this run asks {data[k]!r}" for k in diff)
            raise ValueError(
                f"{out_dir} holds a different tournament ({details}). "
                "Resume it with the same settings, or choose another --out."
            )
    elif runfiles.check_entry(out_dir / "games.jsonl"):
        raise ValueError(f"{out_dir} has games.jsonl but no config.json; choose another --out")


# --------------------------------------------------------------------------- the tournament


def optional_outputs(plot: bool = True, progress: bool = False) -> tuple[bool, bool]:
    """Which of the plot (matplotlib) and the progress bar (tqdm) asked for can be made: each whose
    package is missing is skipped with a one-line note on standard error naming the 'eval' extra.
    Nothing else of a tournament needs them (the statistics need no scipy)."""
    missing = []
    if plot and importlib.util.find_spec("matplotlib") is None:
        plot = False
        missing.append("matplotlib (summary.png)")
    if progress and importlib.util.find_spec("tqdm") is None:
        progress = False
        missing.append("tqdm (the progress bar)")
    if missing:
        print(f"note: no {' or '.join(missing)}: skipped; pip install 'conquian-env[eval]' adds it", file=sys.stderr)
    return plot, progress


def run_tournament(
    options: TournamentConfig | Sequence[str] | str, /, *, verbose: bool = False, **knobs: Any
) -> dict[str, Any]:
    """Play (or resume) a tournament, write its folder and return the summary dict.

    ``options`` is a :class:`TournamentConfig`, or the bot specs with any other field of it
    as a keyword (``run_tournament(["greedy", "random"], games=100, out="results/x")``);
    keywords given with a config replace its fields.  ``verbose`` prints what is resumed
    to standard error.  Raises ``ValueError`` (a :class:`~agents.registry.SpecError` for a
    bad bot spec) before any game is played or any folder made.
    """
    if isinstance(options, TournamentConfig):
        options = dataclasses.replace(options, **knobs)
    else:
        options = TournamentConfig(specs=[options] if isinstance(options, str) else list(options), **knobs)
    options.validate()
    config = make_config(options)
    if options.anchor is not None and options.anchor not in config["labels"]:
        raise ValueError(f"--anchor {options.anchor!r} is not one of the bots {config['labels']}")
    spec_of = dict(zip(config["labels"], config["bot_specs"], strict=True))
    bot_seed_of = bot_seeds(config)
    progress = sys.stderr.isatty() if options.progress is None else options.progress
    if options.progress is None and progress:
        progress = importlib.util.find_spec("tqdm") is not None  # not asked for: no tqdm, no bar, no note
    if options.ray is not None and importlib.util.find_spec("ray") is None:
        raise MissingExtraError("ray", "conquian-evaluate --ray", typed=True)
    names = bot_names(config)  # builds every bot: fail fast, before any folder or worker exists
    plot, progress = optional_outputs(plot=options.plot, progress=progress)  # after any error: notes

    out = Path(options.out) if options.out is not None else default_out_dir(config)
    with runfiles.hold_folder(out):  # one process at a time: a second stops, naming the holder
        return _run_in(out, config, options, spec_of, bot_seed_of, names, plot, progress, verbose)


def _run_in(out: Path, config: dict[str, Any], options: TournamentConfig, spec_of: dict[str, str],
            bot_seed_of: dict[str, int], names: dict[str, str], plot: bool, progress: bool,
            verbose: bool) -> dict[str, Any]:  # fmt: skip
    """:func:`run_tournament`'s work in the folder ``out``, whose lock the caller holds."""
    _check_config(out, config)
    gone = runfiles.remove_partials(out, ("replays",))  # what a killed run was writing
    if verbose and gone:
        print(f"{out}: deleted the half-written {', '.join(gone)} of a killed run", file=sys.stderr)
    written = {**config_data(config), "options": options.to_dict()}
    runfiles.write_text(out / "config.json", json.dumps(written, indent=2) + "\n")

    tasks = make_schedule(config)
    games_path = out / "games.jsonl"
    done = load_games(games_path, config, names, verify=options.verify)
    key = runfiles.read_key(out)
    assert key is not None  # load_games keeps one
    # played deal by deal across the pairs (not pair after pair), so that the progress bar's
    # rate, and so its time left, is that of the whole mix from the start
    todo = sorted((t for t in tasks if t.key not in done), key=lambda t: (t.deal, t.swap, t.index))
    if verbose:
        if config["games"] != options.games:
            print(
                f"note: --games {options.games} rounded up to {config['games']} (duplicate deals come in pairs)",
                file=sys.stderr,
            )
        print(f"{out}: {len(done)} of {len(tasks)} games already played, {len(todo)} to play", file=sys.stderr)
    new = _play(todo, spec_of, bot_seed_of, options, games_path, key, len(tasks), len(done), progress)
    summary = summarize(
        list(done.values()) + new, config, options.confidence, options.bootstrap, options.bt_prior, options.anchor
    )
    summary["out_dir"] = str(out)
    write_summary(summary, out)
    if plot:
        plot_summary(summary, out / "summary.png")
    if options.html:
        write_html_report(summary, out)
    return summary


def _play(
    todo: list[Task],
    spec_of: dict[str, str],
    bot_seed_of: dict[str, int],
    options: TournamentConfig,
    games_path: Path,
    key: bytes,
    total: int,
    done: int,
    progress: bool,
) -> list[dict[str, Any]]:
    """Play the games of ``todo`` (in worker processes with ``jobs`` > 1), appending each to
    ``games_path`` as it ends, signed with ``key`` (:func:`conquian_arena.runfiles.sign_line`),
    and return their lines.  A Ctrl-C keeps every finished game."""
    jobs = max(1, min(options.jobs or os.cpu_count() or 1, len(todo) or 1))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, initial=done, unit="game", file=sys.stderr, dynamic_ncols=True)
    new: list[dict[str, Any]] = []
    with runfiles.open_append(games_path) as f:

        def save(line: dict[str, Any]) -> None:
            f.write(runfiles.sign_line(json.dumps(line), key) + "\n")
            f.flush()  # a kill loses at most the line being written
            new.append(line)
            if bar is not None:
                bar.update(1)

        try:
            if options.ray is not None and todo:
                from .ray_runner import play_on_ray

                for line in play_on_ray(todo, spec_of, bot_seed_of, options.rules, options.ray, options.jobs):
                    save(line)
            elif jobs == 1:
                worker.setup(spec_of, bot_seed_of, options.rules)
                for task in todo:
                    save(play_task(task))
            elif todo:
                with worker.worker_pool(jobs, (spec_of, bot_seed_of, options.rules)) as pool:
                    # chunksize 1: each game comes back, and is written, as soon as it ends
                    for line in pool.imap_unordered(play_task, todo, chunksize=1):
                        save(line)
        finally:
            if bar is not None:
                bar.close()
    return new


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line (the knobs of :class:`TournamentConfig`); returns the exit status:
    0 done, 2 a bad command line or bot spec, 130 interrupted (the games played are kept)."""
    parser = build_parser()
    options = TournamentConfig(**vars(parser.parse_args(argv)))
    try:
        summary = run_tournament(options, verbose=True)
    except SpecError as err:
        print(f"{parser.prog}: {err}", file=sys.stderr)
        return 2
    except ImportError as err:  # a missing extra: one line naming what asked for it and its install line
        told = for_command(err, parser.prog)
        if not isinstance(told, MissingExtraError):
            raise  # no optional package is missing: a broken install or a bug, with its traceback
        print(f"{parser.prog}: error: {told}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a file of the folder that is a folder, a FIFO: one line; any other error as it is
        if (line := runfiles.misplaced(err)) is None:
            raise
        print(f"{parser.prog}: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: games played so far are saved; run the same command again to resume", file=sys.stderr)
        return 130
    print(format_summary(summary))
    png = options.plot and (Path(summary["out_dir"]) / "summary.png").exists()  # skipped without matplotlib
    print(f"\nwrote {summary['out_dir']}/: config.json games.jsonl summary.json summary.csv ratings.csv"
          + (" summary.png" if png else "") + (" report.html replays/" if options.html else ""))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
