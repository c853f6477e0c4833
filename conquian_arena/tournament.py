"""Head-to-head tournaments between Conquian bots, with statistics a reviewer can check.

Usage::

    python evaluate.py greedy random ismcts --games 1000          # round robin, all cores
    python evaluate.py random ismcts:iterations=100 --gauntlet greedy --games 400
    python evaluate.py greedy random --games 200 --forcing --out results/forcing -j 4

Every knob is in :func:`parse_args`; ``python evaluate.py --help`` lists the bot specs.

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

Statistics (all intervals 95% by default, ``--confidence``)
    * score of A against B (win 1, draw 1/2): Student t interval over independent units,
      which are deals when deals are duplicated (the two games of a deal are one paired
      sample: the unit's value is A's mean score over the two games) and games otherwise.
      When every unit has the same score 0 or 1 the t interval collapses, so the Wilson
      score interval (for that all-or-nothing proportion over the units) is given instead.
    * stakes (RULES.md section 6): the games of a pair are a match in deal order; stake 1,
      doubled after each draw, back to 1 after a decided game.  Reported: mean stake won
      per game by A, with a regenerative interval: the match splits into cycles that end
      at each decided game (the stake resets there), the mean is the ratio of cycle sums,
      and its delta-method standard error gives a t interval over cycles.
    * ratings: Bradley-Terry maximum likelihood with draws counted as half a win for each
      side, plus ``--bt-prior`` virtual draws per pair (default 1: keeps ratings finite
      when a bot never loses; negligible with many games), fitted by Newton's method and
      shown on the Elo scale (400 / ln 10 per logit) with mean 0 (or ``--anchor BOT`` at
      0).  Intervals: percentile bootstrap over deals (all games of a resampled deal,
      across every pair, go together), ``--bootstrap`` resamples.

Output folder (``--out``, default ``results/<bots>_g<games>_s<seed>``)
    ``config.json``    what defines the tournament (specs, games, seed, forcing, duplicate);
                       re-running with the same folder resumes, a different config is an error.
    ``games.jsonl``    one JSON object per game, written and flushed as each game ends:
                       ``index pair deal swap seats specs deal_seed game_seed hands stock first
                       forcing players actions winner winner_label moves failure think_time max_think
                       decisions`` (``agents.match.GameRecord`` fields plus the schedule).
                       A corrupt or half-written line is reported, moved to
                       ``games.rejected.txt`` and its game replayed.
    ``summary.json``   everything below, ``summary.csv`` one row per pair,
    ``ratings.csv``    one row per bot, ``summary.png`` score matrix and ratings.
    Only ``timing`` (seconds of thinking) in ``summary.json`` and ``think_time`` / ``max_think``
    in ``games.jsonl`` differ between reruns.

Importable: :func:`run_tournament`, :func:`score_interval`, :func:`stake_results`,
:func:`bradley_terry`, :func:`bootstrap_ratings`, :func:`summarize`.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import json
import math
import multiprocessing
import os
import re
import signal
import sys
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from agents.match import GameRecord, deal_for_seed, play_game
from agents.registry import SpecError, describe_bots, make_agent

ELO_PER_LOGIT = 400.0 / math.log(10.0)
#: fewer independent units than this and an interval is flagged as rough
FEW_UNITS = 20
FORMAT_VERSION = 1
#: the schedule's fields of a games.jsonl line; the rest are agents.match.GameRecord's
SCHEDULE_KEYS = ("index", "pair", "deal", "swap", "seats", "specs", "deal_seed", "game_seed")
#: how agents.match.play_game records a forfeit
FAILURE_KINDS = ("crash", "illegal")
#: every field of a games.jsonl line
LINE_KEYS = SCHEDULE_KEYS + tuple(f.name for f in dataclasses.fields(GameRecord)) + ("winner_label",)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Round robin (or gauntlet) tournament between Conquian bots, with duplicate deals, "
        "confidence intervals, stakes and Bradley-Terry ratings.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="bot specs:\n" + describe_bots(),
    )
    parser.add_argument("specs", nargs="+", help="bot specs, e.g. greedy random ismcts:iterations=200")
    parser.add_argument(
        "--gauntlet",
        default=None,
        metavar="SPEC",
        help="play only SPEC against each listed bot instead of a round robin",
    )
    parser.add_argument(
        "--games", type=int, default=1000, help="games per pair (rounded up to even with duplicate deals)"
    )
    parser.add_argument("--seed", type=int, default=0, help="tournament seed: deals and bot seeds derive from it")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--forcing", action="store_true", help="play the forcing variant (RULES.md section 7)")
    parser.add_argument(
        "--no-duplicate",
        dest="duplicate",
        action="store_false",
        help="fresh deal for every game instead of each deal twice with seats swapped",
    )
    parser.add_argument("--out", default=None, help="results folder (default results/<bots>_g<games>_s<seed>)")
    parser.add_argument("--confidence", type=float, default=0.95, help="level of every interval")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for rating intervals")
    parser.add_argument(
        "--bt-prior",
        type=float,
        default=1.0,
        help="virtual draws added to each pair in the Bradley-Terry fit (0 = plain MLE)",
    )
    parser.add_argument("--anchor", default=None, metavar="BOT", help="bot label rated 0 Elo (default: mean 0)")
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    parser.add_argument("--no-plot", dest="plot", action="store_false", help="skip summary.png")
    return parser.parse_args(argv)


# --------------------------------------------------------------------------- schedule and seeds


class Task(NamedTuple):
    """One game of the schedule.  ``key`` identifies it in games.jsonl (for resuming)."""

    index: int
    pair: tuple[str, str]  # labels (A, B) as the pair is listed
    deal: int
    swap: int  # 0: A in seat 0 (plays first); 1: B in seat 0
    seats: tuple[str, str]  # labels per seat
    specs: tuple[str, str]  # specs per seat
    deal_seed: int
    game_seed: int

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.pair[0], self.pair[1], self.deal, self.swap)


def derived_seed(*words: int) -> int:
    """A 63-bit seed from a tuple of non-negative ints (numpy SeedSequence hashing)."""
    return int(np.random.SeedSequence(list(words)).generate_state(1, np.uint64)[0] >> np.uint64(1))


def deal_seed(seed: int, deal: int) -> int:
    return derived_seed(seed, 0, deal)


def game_seed(seed: int, deal: int, swap: int) -> int:
    return derived_seed(seed, 1, deal, swap)


def short_name(spec: str) -> str:
    """A table-friendly name: ``python:pkg.mod:Class,k=v`` -> ``Class,k=v``; ``ppo:dir/m.zip`` -> ``ppo:m.zip``."""
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if kind.lower() == "python":
        return rest.partition(":")[2] or spec
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


# --------------------------------------------------------------------------- workers

_WORKER: dict[str, Any] = {}


def _init_worker(spec_of: dict[str, str], bot_seed_of: dict[str, int], forcing: bool) -> None:
    """Per-process setup: bots are built lazily, one instance per label, from their specs."""
    _WORKER.clear()
    _WORKER.update(spec_of=spec_of, bot_seed_of=bot_seed_of, forcing=forcing, bots={})


def _init_pool_worker(spec_of: dict[str, str], bot_seed_of: dict[str, int], forcing: bool) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is handled once, by the main process
    _init_worker(spec_of, bot_seed_of, forcing)


def _bot(label: str) -> Any:
    bots = _WORKER["bots"]
    if label not in bots:
        bots[label] = make_agent(_WORKER["spec_of"][label], _WORKER["bot_seed_of"][label])
    return bots[label]


def play_task(task: Task) -> dict[str, Any]:
    """Play one scheduled game (in a worker) and return its games.jsonl object."""
    hands, stock = deal_for_seed(task.deal_seed)
    agents = [_bot(task.seats[0]), _bot(task.seats[1])]
    record = play_game(agents, hands=hands, stock=stock, first=0, forcing=_WORKER["forcing"], seed=task.game_seed)
    line = {
        "index": task.index,
        "pair": list(task.pair),
        "deal": task.deal,
        "swap": task.swap,
        "seats": list(task.seats),
        "specs": list(task.specs),
        "deal_seed": task.deal_seed,
        "game_seed": task.game_seed,
    }
    line.update(record.to_dict())
    line["winner_label"] = None if record.winner is None else task.seats[record.winner]
    return line


# --------------------------------------------------------------------------- games.jsonl


class ResumeWarning(UserWarning):
    """A line of games.jsonl could not be used; its game will be played again."""


def check_game_line(obj: dict[str, Any], task: Task, forcing: bool) -> str | None:
    """Why a games.jsonl object is not a faithful record of ``task``'s game, or None.

    Every field must be there with the right shape, the deal, seats, specs and seeds must
    be the schedule's, and the game is replayed: every action legal, and the recorded
    result (winner, failure, moves) the one the replay reaches.  An edited result, swapped
    seats or an inserted action are caught here.
    """
    from conquian_env.replay import RecordedGame, ReplayError, _check_record, replay_states

    missing = [k for k in LINE_KEYS if k not in obj]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    shape = _check_record(obj)
    if shape is not None:
        return shape
    if obj["seats"] != list(task.seats) or obj["game_seed"] != task.game_seed or obj["deal_seed"] != task.deal_seed:
        return "seats or seeds that differ from the schedule"
    hands, stock = deal_for_seed(task.deal_seed)
    if obj["hands"] != hands or obj["stock"] != stock or obj["first"] != 0 or obj["forcing"] != forcing:
        return "a deal (or first player, or variant) that differs from the schedule"
    try:
        states, _ = replay_states(RecordedGame(index=obj["index"], line=0, data=obj))
    except ReplayError as err:
        return f"a game that does not replay ({err})"
    final = states[-1]
    failure = obj["failure"]
    if failure is None:
        expected = None if final.winner < 0 else final.winner
        if not final.is_terminal() or obj["winner"] != expected:
            return f"a result ({obj['winner']!r}) that is not where the recorded moves lead"
    else:
        well_formed = isinstance(failure, dict) and failure.get("seat") in (0, 1)
        if not well_formed or failure.get("kind") not in FAILURE_KINDS:
            return f"a malformed failure {failure!r}"
        if final.is_terminal() or obj["winner"] != 1 - failure["seat"]:
            return "a forfeit that does not match the recorded moves"
    if obj["moves"] != len(obj["actions"]):
        return "a move count that differs from the recorded moves"
    label = None if obj["winner"] is None else task.seats[obj["winner"]]
    if obj["winner_label"] != label:
        return "a winner label that differs from the seats"
    for key in ("think_time", "decisions", "max_think"):
        value = obj[key]
        if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value)):
            return f"a malformed {key!r}"
    return None


def load_games(path: Path, tasks: list[Task], forcing: bool = False) -> dict[tuple, dict[str, Any]]:
    """Games already in ``path`` that belong to this schedule, keyed by (A, B, deal, swap).

    Corrupt, half-written, foreign, repeated or unfaithful lines (:func:`check_game_line`
    replays every game) are reported (with their line number), moved to
    ``games.rejected.txt`` and left out, so their games are played again; the file is
    rewritten (atomically) with only the good lines so new lines append cleanly.
    """
    if not path.exists():
        return {}
    by_key = {t.key: t for t in tasks}
    raw = path.read_bytes()
    chunks = raw.split(b"\n")
    good: dict[tuple, dict[str, Any]] = {}
    good_lines: list[bytes] = []
    rejected: list[bytes] = []
    for lineno, chunk in enumerate(chunks, 1):
        if not chunk.strip():
            continue
        problem = None
        try:
            obj = json.loads(chunk.decode("utf-8"))
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
            missing = [k for k in ("pair", "deal", "swap", "deal_seed", "specs") if k not in obj]
            if missing:
                raise ValueError(f"missing field(s) {', '.join(missing)}")
            key = (obj["pair"][0], obj["pair"][1], obj["deal"], obj["swap"])
            task = by_key.get(key)
            if task is None or obj["deal_seed"] != task.deal_seed or obj["specs"] != list(task.specs):
                problem = "a game that is not in this tournament's schedule"
            elif key in good:
                problem = "a repeat of an earlier game"
            else:
                problem = check_game_line(obj, task, forcing)
        except (ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError) as err:
            problem = f"corrupt or half-written ({type(err).__name__}: {str(err)[:80]})"
        if problem is not None:
            warnings.warn(
                f"{path}: line {lineno} is {problem}; skipped (moved to games.rejected.txt), "
                "its game will be played again",
                ResumeWarning,
                stacklevel=2,
            )
            rejected.append(chunk)
            continue
        good[key] = obj
        good_lines.append(chunk)
    if rejected or (raw and not raw.endswith(b"\n")):
        if rejected:
            with open(path.parent / "games.rejected.txt", "ab") as f:
                f.write(b"".join(line + b"\n" for line in rejected))
        tmp = path.with_suffix(".jsonl.tmp")
        tmp.write_bytes(b"".join(line + b"\n" for line in good_lines))
        os.replace(tmp, path)
    return good


def make_config(
    specs: list[str], games: int, seed: int, forcing: bool, duplicate: bool, gauntlet: str | None
) -> dict[str, Any]:
    bot_specs = ([gauntlet] if gauntlet is not None else []) + list(specs)
    return {
        "format": FORMAT_VERSION,
        "specs": list(specs),
        "gauntlet": gauntlet,
        "bot_specs": bot_specs,
        "labels": bot_labels(bot_specs),
        "games": games_per_pair(games, duplicate),
        "games_requested": games,
        "seed": seed,
        "forcing": bool(forcing),
        "duplicate": bool(duplicate),
    }


def default_out_dir(config: dict[str, Any]) -> Path:
    slug = "-".join(re.sub(r"[^A-Za-z0-9=.]+", "_", label).strip("_") for label in config["labels"])
    if config["gauntlet"] is not None:
        slug = "gauntlet-" + slug
    if len(slug) > 60:
        slug = slug[:50] + "-" + hashlib.sha1(slug.encode()).hexdigest()[:8]
    extra = ("_forcing" if config["forcing"] else "") + ("" if config["duplicate"] else "_nodup")
    return Path("results") / f"{slug}_g{config['games']}_s{config['seed']}{extra}"


def _check_config(out_dir: Path, config: dict[str, Any]) -> None:
    path = out_dir / "config.json"
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except ValueError as err:
            raise ValueError(f"{path} is not valid JSON ({err}); fix it or use another --out") from err
        compare = [k for k in config if k != "games_requested"]
        diff = [k for k in compare if old.get(k) != config[k]]
        if diff:
            details = "; ".join(f"{k}: folder has {old.get(k)!r}, this run asks {config[k]!r}" for k in diff)
            raise ValueError(
                f"{out_dir} holds a different tournament ({details}). "
                "Resume it with the same settings, or choose another --out."
            )
    elif (out_dir / "games.jsonl").exists():
        raise ValueError(f"{out_dir} has games.jsonl but no config.json; choose another --out")


# --------------------------------------------------------------------------- statistics


class Interval(NamedTuple):
    estimate: float
    low: float
    high: float
    method: str


def t_interval(values: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """Student t interval for the mean of independent values (nan bounds with fewer than 2)."""
    from scipy import stats

    x = np.asarray(values, dtype=float)
    mean = float(x.mean()) if x.size else math.nan
    if x.size < 2:
        return mean, math.nan, math.nan
    sem = float(x.std(ddof=1)) / math.sqrt(x.size)
    half = float(stats.t.ppf(0.5 + confidence / 2, x.size - 1)) * sem
    return mean, mean - half, mean + half


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion."""
    from scipy import stats

    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return center - half, center + half


def score_interval(unit_scores: Any, confidence: float = 0.95, unit: str = "games") -> Interval:
    """Mean score (win 1, draw 1/2, loss 0) with its interval over independent units.

    ``unit_scores``: one value in [0, 1] per independent unit: per game, or per deal (the
    mean of the two seat-swapped games) with duplicate deals.  A draw makes the score
    non-binomial, so the interval is Student t on the unit values, clipped to [0, 1].
    If all units score 0 or all score 1 (zero variance) the Wilson interval is used.  If
    all score the same value ``v`` in between (two identical players: every deal 1/2), a
    zero-width t interval would claim certainty; instead the share ``p`` of units that
    could score otherwise and still go unseen in ``n`` is bounded (exact binomial,
    ``1 - (alpha/2)^(1/n)``, the "rule of three"), and the interval is
    ``[v - p v, v + p (1 - v)]``.  Fewer than :data:`FEW_UNITS` units are flagged in the
    method text: treat such an interval as rough.
    """
    x = np.asarray(unit_scores, dtype=float)
    n = x.size
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, "no games")
    few = f"; only {n} {unit}: a rough interval" if n < FEW_UNITS else ""
    if np.all(x == x[0]):
        v = float(x[0])
        if v in (0.0, 1.0):
            low, high = wilson_interval(float(x.sum()), n, confidence)
            return Interval(v, low, high, f"Wilson score interval, all {n} {unit} scored {v:g}{few}")
        p = 1.0 - ((1.0 - confidence) / 2) ** (1.0 / n)
        return Interval(
            v, v - p * v, v + p * (1.0 - v), f"all {n} {unit} scored {v:g}: bound on the unseen share (exact){few}"
        )
    mean, low, high = t_interval(x, confidence)
    return Interval(mean, max(0.0, low), min(1.0, high), f"Student t interval over {n} {unit}{few}")


def stake_results(outcomes: Any, confidence: float = 0.95) -> dict[str, Any]:
    """Money of a match under RULES.md section 6, from A's side.

    ``outcomes`` in match order: +1 A won, -1 A lost, 0 draw.  Stake 1, doubled after each
    draw, reset to 1 after a decided game.  Returns the stake and A's winnings per game,
    the total, the mean per game and its interval.  Interval: the match is a sequence of
    independent cycles (draws, then the decided game that resets the stake; a trailing run
    of draws is the last cycle); the mean is sum(winnings)/sum(games) over cycles, with the
    delta-method standard error of that ratio and a t quantile with cycles-1 degrees of freedom.
    """
    from scipy import stats

    stakes, winnings, cycles = [], [], []
    stake, cyc_win, cyc_len = 1, 0, 0
    for outcome in outcomes:
        outcome = int(outcome)
        if outcome not in (-1, 0, 1):
            raise ValueError(f"outcomes are +1 (A won), -1 (A lost) or 0 (draw), got {outcome!r}")
        stakes.append(stake)
        winnings.append(outcome * stake)
        cyc_win += outcome * stake
        cyc_len += 1
        if outcome == 0:
            stake *= 2
        else:
            cycles.append((cyc_win, cyc_len))
            stake, cyc_win, cyc_len = 1, 0, 0
    if cyc_len:
        cycles.append((cyc_win, cyc_len))
    n = len(winnings)
    total = int(sum(winnings))
    mean = _ratio(total, n) if n else math.nan
    low = high = math.nan
    m = len(cycles)
    # With draws at rate d a cycle's stake is 2^K, K geometric: its mean is finite only for
    # d < 1/2 and its variance only for d < 1/4.  Past those rates a sample mean or an
    # interval is dominated by the longest run of draws and means nothing.
    # The summary reports only what is meaningful (``meaningful``), and says why (``note``).
    draw_share = sum(1 for w in winnings if w == 0) / n if n else math.nan
    note, meaningful = "", "mean and interval"
    if n and draw_share >= 0.5:
        meaningful = "nothing"
        note = f"{draw_share:.0%} draws: the expected stake is infinite at 1/2 or more, so no mean is given"
    elif n and draw_share >= 0.25:
        meaningful = "mean"
        note = f"{draw_share:.0%} draws: the stake's variance is infinite at 1/4 or more, so no interval is given"
    if m >= 2 and math.isfinite(mean) and max(stakes) < 2**1000:  # beyond that floats overflow
        w = np.array([c[0] for c in cycles], dtype=float)
        length = np.array([c[1] for c in cycles], dtype=float)
        resid = w - mean * length
        se = math.sqrt(float(np.sum(resid**2)) / (m - 1) / m) / float(length.mean())
        half = float(stats.t.ppf(0.5 + confidence / 2, m - 1)) * se
        low, high = mean - half, mean + half
    return {
        "stakes": stakes,
        "winnings": winnings,
        "total": total,
        "mean": mean,
        "low": low,
        "high": high,
        "max_stake": max(stakes) if stakes else 0,
        "cycles": m,
        "method": f"regenerative ratio estimator over {m} stake cycles, delta-method t interval",
        "note": note,
        "meaningful": meaningful,
    }


def _ratio(numerator: int, denominator: int) -> float:
    """numerator / denominator as a float, +-inf when it does not fit (2**1024 after 1024 draws in a row)."""
    try:
        return numerator / denominator
    except OverflowError:
        return math.inf if numerator > 0 else -math.inf


def _strongly_connected(beats: np.ndarray) -> bool:
    """Is every bot reachable from every other along 'scored something against' edges?"""
    k = beats.shape[0]
    for adj in (beats, beats.T):
        seen, todo = {0}, [0]
        while todo:
            i = todo.pop()
            for j in np.flatnonzero(adj[i]):
                if int(j) not in seen:
                    seen.add(int(j))
                    todo.append(int(j))
        if len(seen) < k:
            return False
    return True


def bradley_terry(
    wins: Any, prior_draws: float = 0.0, anchor: int | None = None, tol: float = 1e-10, max_iter: int = 100
) -> np.ndarray:
    """Bradley-Terry strengths (natural-log scale) by maximum likelihood.

    ``wins[i, j]``: points bot i scored against bot j (wins + draws / 2); games between i
    and j are ``wins[i, j] + wins[j, i]``.  P(i beats j) = 1 / (1 + exp(r_j - r_i)).
    ``prior_draws`` virtual draws are added to every pair that played.  Returned strengths
    have mean 0, or ``r[anchor] = 0``.  Raises ValueError when no finite maximum exists
    (some group of bots never scored against the rest).  Multiply by ``ELO_PER_LOGIT``
    for Elo points.
    """
    w = np.array(wins, dtype=float)
    k = w.shape[0]
    if w.shape != (k, k) or np.any(w < 0):
        raise ValueError(f"wins must be a square non-negative matrix, got shape {w.shape}")
    np.fill_diagonal(w, 0.0)
    played = (w + w.T) > 0
    w = w + played * (prior_draws / 2.0)
    n = w + w.T
    if k == 1:
        return np.zeros(1)
    if not _strongly_connected(w > 0):
        raise ValueError(
            "no finite Bradley-Terry ratings: some bots never scored a point against the others "
            "(add virtual draws with --bt-prior > 0)"
        )

    def loglik(r: np.ndarray) -> float:
        diff = r[:, None] - r[None, :]
        return float(np.sum(w * -np.logaddexp(0.0, -diff)))

    r = np.zeros(k)
    current = loglik(r)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(r[None, :] - r[:, None]))  # p[i, j] = P(i beats j)
        grad = np.sum(w - n * p, axis=1)
        info = n * p * p.T  # observed information: off-diagonal -H
        hess = info.copy()
        np.fill_diagonal(hess, -info.sum(axis=1))  # this is -(Hessian); solve on r[1:], r[0] = 0
        step = np.zeros(k)
        step[1:] = np.linalg.solve(-hess[1:, 1:], grad[1:])
        t = 1.0
        while True:
            candidate = r + t * step
            value = loglik(candidate)
            if value >= current - 1e-12 or t < 1e-8:
                break
            t /= 2
        r, current = candidate, value
        if np.max(np.abs(t * step)) < tol:
            break
    return r - (r[anchor] if anchor is not None else r.mean())


def bootstrap_ratings(
    unit_wins: np.ndarray,
    resamples: int,
    prior_draws: float,
    anchor: int | None,
    confidence: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Percentile bootstrap of Bradley-Terry Elo ratings over independent units (deals).

    ``unit_wins[d, i, j]``: points of bot i against bot j in the games of unit d.  Each
    resample draws the units with replacement and refits.  Returns (low, high, failed)
    where ``failed`` counts resamples without finite ratings (left out).
    """
    units, k = unit_wins.shape[0], unit_wins.shape[1]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    counts = rng.multinomial(units, np.full(units, 1.0 / units), size=resamples)
    totals = (counts @ unit_wins.reshape(units, k * k)).reshape(resamples, k, k)
    fits, failed = [], 0
    for b in range(resamples):
        try:
            fits.append(bradley_terry(totals[b], prior_draws, anchor) * ELO_PER_LOGIT)
        except ValueError:
            failed += 1
    if not fits:
        return np.full(k, math.nan), np.full(k, math.nan), failed
    alpha = (1 - confidence) / 2
    arr = np.array(fits)
    return np.quantile(arr, alpha, axis=0), np.quantile(arr, 1 - alpha, axis=0), failed


def _score_of(game: dict[str, Any], label: str) -> float:
    if game["winner_label"] is None:
        return 0.5
    return 1.0 if game["winner_label"] == label else 0.0


def summarize(
    games: list[dict[str, Any]],
    config: dict[str, Any],
    confidence: float = 0.95,
    bootstrap: int = 1000,
    bt_prior: float = 1.0,
    anchor: str | None = None,
) -> dict[str, Any]:
    """All statistics of a finished tournament from its games.jsonl objects (any order)."""
    labels = config["labels"]
    index = {label: i for i, label in enumerate(labels)}
    k = len(labels)
    unit = "deals (seat-swapped game pairs)" if config["duplicate"] else "games"
    games = sorted(games, key=lambda g: g["index"])
    by_pair: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for g in games:
        by_pair[(g["pair"][0], g["pair"][1])].append(g)

    pairs_out = []
    points = np.zeros((k, k))
    units = max(g["deal"] for g in games) + 1
    unit_points = np.zeros((units, k, k))
    for (a, b), pair_games in by_pair.items():
        pair_games.sort(key=lambda g: (g["deal"], g["swap"]))
        scores_a = np.array([_score_of(g, a) for g in pair_games])
        deals = np.array([g["deal"] for g in pair_games])
        unique_deals = np.unique(deals)
        unit_scores = np.array([scores_a[deals == d].mean() for d in unique_deals])
        score = score_interval(unit_scores, confidence, unit)
        outcomes = [0 if s == 0.5 else (1 if s == 1.0 else -1) for s in scores_a]
        stake = stake_results(outcomes, confidence)
        moves = np.array([g["moves"] for g in pair_games], dtype=float)
        fails = {label: {"crash": 0, "illegal": 0} for label in (a, b)}
        for g in pair_games:
            if g["failure"]:
                fails[g["seats"][g["failure"]["seat"]]][g["failure"]["kind"]] += 1
        wins, draws = int(np.sum(scores_a == 1.0)), int(np.sum(scores_a == 0.5))
        first_score = [1.0 - s if g["swap"] else s for g, s in zip(pair_games, scores_a, strict=True)]
        pairs_out.append(
            {
                "a": a,
                "b": b,
                "games": len(pair_games),
                "units": len(unique_deals),
                "wins": wins,
                "draws": draws,
                "losses": len(pair_games) - wins - draws,
                "score": score.estimate,
                "score_low": score.low,
                "score_high": score.high,
                "score_method": score.method,
                "draw_rate": draws / len(pair_games),
                # share of the decided games that A won (the usual figure when draws are common)
                "decided_win_rate": wins / decided if (decided := len(pair_games) - draws) else math.nan,
                "stake_mean": stake["mean"] if stake["meaningful"] != "nothing" else math.nan,
                "stake_low": stake["low"] if stake["meaningful"] == "mean and interval" else math.nan,
                "stake_high": stake["high"] if stake["meaningful"] == "mean and interval" else math.nan,
                "stake_total": stake["total"],
                "stake_max": stake["max_stake"],
                "stake_method": stake["method"],
                "stake_note": stake["note"],
                "moves_mean": float(moves.mean()),
                "moves_sd": float(moves.std(ddof=1)) if len(moves) > 1 else 0.0,
                "seat0_score": float(np.mean(first_score)),
                "failures": fails,
            }
        )
        ia, ib = index[a], index[b]
        points[ia, ib] += scores_a.sum()
        points[ib, ia] += len(scores_a) - scores_a.sum()
        np.add.at(unit_points[:, ia, ib], deals, scores_a)
        np.add.at(unit_points[:, ib, ia], deals, 1.0 - scores_a)

    anchor_index = None
    if anchor is not None:
        if anchor not in index:
            raise ValueError(f"--anchor {anchor!r} is not one of the bots {labels}")
        anchor_index = index[anchor]
    elo = bradley_terry(points, bt_prior, anchor_index) * ELO_PER_LOGIT
    low, high, failed = bootstrap_ratings(unit_points, bootstrap, bt_prior, anchor_index, confidence, config["seed"])

    per_bot = {
        label: {
            "games": 0,
            "points": 0.0,
            "wins": 0,
            "draws": 0,
            "losses": 0,
            "crash": 0,
            "illegal": 0,
            "example_failure": None,
        }
        for label in labels
    }
    timing = {label: {"seconds": 0.0, "decisions": 0, "max_seconds": 0.0} for label in labels}
    first_by_deal: dict[int, list[float]] = defaultdict(list)
    for g in games:
        first_by_deal[g["deal"]].append(_score_of(g, g["seats"][0]))
        for seat, label in enumerate(g["seats"]):
            s = _score_of(g, label)
            bot = per_bot[label]
            bot["games"] += 1
            bot["points"] += s
            bot["wins" if s == 1.0 else "draws" if s == 0.5 else "losses"] += 1
            timing[label]["seconds"] += g.get("think_time", [0.0, 0.0])[seat]
            timing[label]["decisions"] += g.get("decisions", [0, 0])[seat]
            timing[label]["max_seconds"] = max(timing[label]["max_seconds"], g.get("max_think", [0.0, 0.0])[seat])
        if g["failure"]:
            label = g["seats"][g["failure"]["seat"]]
            per_bot[label][g["failure"]["kind"]] += 1
            if per_bot[label]["example_failure"] is None:
                per_bot[label]["example_failure"] = {"index": g["index"], **g["failure"]}
    ratings = []
    for label, i in index.items():
        bot = per_bot[label]
        ratings.append(
            {
                "bot": label,
                "spec": config["bot_specs"][i],
                "elo": float(elo[i]),
                "elo_low": float(low[i]),
                "elo_high": float(high[i]),
                "score": bot["points"] / bot["games"] if bot["games"] else math.nan,
                **{key: bot[key] for key in ("games", "wins", "draws", "losses", "crash", "illegal")},
                "example_failure": bot["example_failure"],
            }
        )
    first = score_interval([np.mean(v) for _, v in sorted(first_by_deal.items())], confidence, unit)
    all_moves = np.array([g["moves"] for g in games], dtype=float)
    anchor_text = f"{anchor} at 0" if anchor is not None else "mean 0"
    return {
        "config": config,
        "confidence": confidence,
        "methods": {
            "score": f"Student t interval over independent {unit} (Wilson score interval when every unit "
            "scored 0 or every unit scored 1), clipped to [0, 1]",
            "stake": "RULES.md section 6 stakes (1, doubled after each draw, reset after a decided game), "
            "games of a pair as one match in deal order; regenerative ratio estimator over stake cycles "
            "(a cycle ends at each decided game, cycles treated as independent) with a delta-method t interval",
            "ratings": f"Bradley-Terry maximum likelihood (Newton), draws as half wins, {bt_prior:g} virtual "
            f"draw(s) per pair; Elo scale (400/ln 10 per logit), {anchor_text}",
            "rating_interval": f"percentile bootstrap over {units} {unit}, {bootstrap} resamples"
            + (f" ({failed} without finite ratings left out)" if failed else ""),
        },
        "pairs": pairs_out,
        "ratings": ratings,
        "first_player": {
            "score": first.estimate,
            "low": first.low,
            "high": first.high,
            "method": first.method,
        },
        "games": len(games),
        "moves_mean": float(all_moves.mean()),
        "draw_rate": float(np.mean([g["winner_label"] is None for g in games])),
        "timing": {
            label: {
                "ms_per_decision": 1000 * t["seconds"] / t["decisions"] if t["decisions"] else math.nan,
                **t,
            }
            for label, t in timing.items()
        },
    }


# --------------------------------------------------------------------------- reports


def format_summary(summary: dict[str, Any]) -> str:
    """The terminal report."""
    cfg = summary["config"]
    pct = round(100 * summary["confidence"])
    kind = f"gauntlet of {cfg['labels'][0]}" if cfg["gauntlet"] is not None else "round robin"
    deals = "duplicate deals (seats swapped)" if cfg["duplicate"] else "one deal per game"
    lines = [
        f"Conquian tournament: {len(cfg['labels'])} bots, {kind}, {cfg['games']} games per pair, {deals}, "
        f"seed {cfg['seed']}, forcing {'on' if cfg['forcing'] else 'off'}",
        "",
        f"{'A':<24} {'B':<24} {'W':>5} {'D':>5} {'L':>5} {'W/(W+L)':>7}  {'score A':>7} {f'[{pct}% CI]':<15} "
        f"{'stake/game A':>12} {f'[{pct}% CI]':<19} {'moves':>6}  fail A/B",
    ]
    for p in summary["pairs"]:
        fa = sum(p["failures"][p["a"]].values())
        fb = sum(p["failures"][p["b"]].values())
        stake_ci = f"[{_num(p['stake_low'])}, {_num(p['stake_high'])}]"
        lines.append(
            f"{_cut(p['a'], 24):<24} {_cut(p['b'], 24):<24} {p['wins']:>5} {p['draws']:>5} {p['losses']:>5} "
            f"{_pct(p['decided_win_rate']):>7}  "
            f"{p['score']:>7.3f} [{p['score_low']:.3f}, {p['score_high']:.3f}] "
            f"{_num(p['stake_mean']):>12} {stake_ci:<19} "
            f"{p['moves_mean']:>6.1f}  {fa}/{fb}"
        )
    lines += [
        "",
        f"{'bot':<30} {'Elo':>7} {f'[{pct}% CI]':<18} {'games':>6} {'score':>6} {'crash':>6} "
        f"{'illegal':>7} {'ms/move':>8} {'max ms':>8}",
    ]
    for r in sorted(summary["ratings"], key=lambda r: -r["elo"]):
        timing = summary["timing"][r["bot"]]
        ms, max_ms = timing["ms_per_decision"], 1000 * timing["max_seconds"]
        lines.append(
            f"{_cut(r['bot'], 30):<30} {r['elo']:>+7.0f} [{r['elo_low']:+.0f}, {r['elo_high']:+.0f}]".ljust(57)
            + f" {r['games']:>6} {r['score']:>6.3f} {r['crash']:>6} {r['illegal']:>7} {ms:>8.2f} {max_ms:>8.1f}"
        )
    fp = summary["first_player"]
    methods = summary["methods"]
    lines += [
        "",
        f"first player (seat 0) score {fp['score']:.3f} [{fp['low']:.3f}, {fp['high']:.3f}]; "
        f"draws {100 * summary['draw_rate']:.1f}%; mean game length {summary['moves_mean']:.1f} decisions",
        "",
        "methods:",
        f"  score:   {methods['score']}",
        f"  stake:   {methods['stake']}",
        *(f"           {p['a']} vs {p['b']}: {p['stake_note']}" for p in summary["pairs"] if p.get("stake_note")),
        f"  ratings: {methods['ratings']}",
        f"           interval: {methods['rating_interval']}",
    ]
    return "\n".join(lines)


def _pct(x: float) -> str:
    return "-" if x != x else f"{100 * x:.1f}%"  # NaN when no game was decided


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 2] + ".."


def _num(x: float) -> str:
    """Signed, 3 decimals; scientific once doubling stakes make it huge; n/a when not given."""
    if math.isnan(x):
        return "n/a"
    return f"{x:+.3f}" if not math.isfinite(x) or abs(x) < 1e4 else f"{x:+.2e}"


def write_summary(summary: dict[str, Any], out_dir: Path) -> None:
    (out_dir / "summary.json").write_text(json.dumps(_json_safe(summary), indent=2) + "\n")
    pair_fields = [
        "a", "b", "games", "units", "wins", "draws", "losses", "score", "score_low", "score_high", "draw_rate",
        "decided_win_rate", "stake_mean", "stake_low", "stake_high", "stake_total", "stake_max", "moves_mean",
        "moves_sd", "seat0_score", "crash_a", "illegal_a", "crash_b", "illegal_b",
    ]  # fmt: skip
    with open(out_dir / "summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=pair_fields, extrasaction="ignore")
        writer.writeheader()
        for p in summary["pairs"]:
            fails = {f"{kind}_{side}": p["failures"][p[side]][kind] for side in "ab" for kind in ("crash", "illegal")}
            writer.writerow({**p, **fails})
    bot_fields = ["bot", "spec", "elo", "elo_low", "elo_high", "games", "score", "wins", "draws", "losses",
                  "crash", "illegal"]  # fmt: skip
    with open(out_dir / "ratings.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=bot_fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(summary["ratings"])


def _json_safe(obj: Any) -> Any:
    """NaN is not JSON: write null instead."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def plot_summary(summary: dict[str, Any], path: Path) -> None:
    """summary.png: score matrix (row bot's score against column bot) and Elo with intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = summary["config"]["labels"]
    k = len(labels)
    index = {label: i for i, label in enumerate(labels)}
    matrix = np.full((k, k), np.nan)
    record = {}  # (row, column) -> "W-D-L" of the row bot
    for p in summary["pairs"]:
        ia, ib = index[p["a"]], index[p["b"]]
        matrix[ia, ib], matrix[ib, ia] = p["score"], 1 - p["score"]
        record[ia, ib] = f"{p['wins']}-{p['draws']}-{p['losses']}"
        record[ib, ia] = f"{p['losses']}-{p['draws']}-{p['wins']}"
    ratings = sorted(summary["ratings"], key=lambda r: r["elo"])
    pct = round(100 * summary["confidence"])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7 + 1.1 * k, 2.6 + 0.75 * k), gridspec_kw={"width_ratios": [1, 1]})
    cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="0.85")  # grey: not played
    image = ax1.imshow(np.ma.masked_invalid(matrix), cmap=cmap, vmin=0, vmax=1)
    for (i, j), wdl in record.items():
        color = "white" if abs(matrix[i, j] - 0.5) > 0.3 else "black"
        ax1.text(j, i, f"{matrix[i, j]:.2f}\n{wdl}", ha="center", va="center", fontsize=9, color=color)
    short = [_cut(label, 22) for label in labels]
    ax1.set_xticks(range(k), short, rotation=30, ha="right")
    ax1.set_yticks(range(k), short)
    ax1.set_xlabel("opponent")
    ax1.set_title("score of row bot (win 1, draw 1/2)\nand its wins-draws-losses", fontsize=10)
    fig.colorbar(image, ax=ax1, fraction=0.046, pad=0.04)
    y = np.arange(len(ratings))
    elo = np.array([r["elo"] for r in ratings])
    low = np.array([r["elo_low"] for r in ratings])
    high = np.array([r["elo_high"] for r in ratings])
    ax2.errorbar(elo, y, xerr=[np.maximum(elo - low, 0), np.maximum(high - elo, 0)], fmt="o", capsize=4)
    ax2.set_yticks(y, [_cut(r["bot"], 22) for r in ratings])
    ax2.axvline(0, color="grey", lw=0.8, ls=":")
    ax2.set_xlabel(f"Elo (Bradley-Terry), {pct}% bootstrap CI")
    ax2.set_title("ratings")
    ax2.set_ylim(-0.6, len(ratings) - 0.4)
    cfg = summary["config"]
    fig.suptitle(
        f"Conquian: {cfg['games']} games per pair, {'duplicate deals' if cfg['duplicate'] else 'single deals'}, "
        f"forcing {'on' if cfg['forcing'] else 'off'}, seed {cfg['seed']}",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


# --------------------------------------------------------------------------- the tournament


def check_requirements(plot: bool = True, progress: bool = False) -> None:
    """Raise ``ValueError`` naming the missing packages (and the install command) before any
    work starts: the statistics need scipy, the plot matplotlib, the progress bar tqdm."""
    import importlib.util

    needed = ["scipy"] + (["matplotlib"] if plot else []) + (["tqdm"] if progress else [])
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        raise ValueError(
            f"evaluate.py needs {', '.join(missing)} (the 'eval' extra): pip install 'conquian-env[eval]'"
            + ("; or pass --no-plot" if missing == ["matplotlib"] else "")
        )


def run_tournament(
    specs: list[str],
    games: int = 1000,
    seed: int = 0,
    out_dir: str | Path | None = None,
    jobs: int | None = None,
    duplicate: bool = True,
    forcing: bool = False,
    gauntlet: str | None = None,
    progress: bool = False,
    confidence: float = 0.95,
    bootstrap: int = 1000,
    bt_prior: float = 1.0,
    anchor: str | None = None,
    plot: bool = True,
    verbose: bool = False,
) -> dict[str, Any]:
    """Play (or resume) a tournament, write its folder and return the summary dict."""
    specs = [specs] if isinstance(specs, str) else list(specs)
    if games < 1:
        raise ValueError(f"games per pair must be at least 1, got {games}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if bootstrap < 1:
        raise ValueError(f"bootstrap resamples must be at least 1, got {bootstrap}")
    if gauntlet is None and len(specs) < 2:
        raise ValueError(f"a round robin needs at least two bots, got {specs}; or use --gauntlet SPEC")
    config = make_config(specs, games, seed, forcing, duplicate, gauntlet)
    if anchor is not None and anchor not in config["labels"]:
        raise ValueError(f"--anchor {anchor!r} is not one of the bots {config['labels']}")
    spec_of = dict(zip(config["labels"], config["bot_specs"], strict=True))
    bot_seed_of = {label: derived_seed(seed, 3, i) for i, label in enumerate(config["labels"])}
    check_requirements(plot=plot, progress=progress)  # fail fast, before any game is played
    for spec in config["bot_specs"]:  # fail fast, before any folder or worker exists
        make_agent(spec, 0)

    out = Path(out_dir) if out_dir is not None else default_out_dir(config)
    out.mkdir(parents=True, exist_ok=True)
    _check_config(out, config)
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")

    tasks = make_schedule(config)
    games_path = out / "games.jsonl"
    done = load_games(games_path, tasks, forcing)
    # played deal by deal across the pairs (not pair after pair), so that the progress bar's
    # rate, and so its time left, is that of the whole mix from the start
    todo = sorted((t for t in tasks if t.key not in done), key=lambda t: (t.deal, t.swap, t.index))
    if verbose:
        if config["games"] != games:
            print(
                f"note: --games {games} rounded up to {config['games']} (duplicate deals come in pairs)",
                file=sys.stderr,
            )
        print(f"{out}: {len(done)} of {len(tasks)} games already played, {len(todo)} to play", file=sys.stderr)

    jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo) or 1))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(tasks), initial=len(done), unit="game", file=sys.stderr, dynamic_ncols=True)
    new: list[dict[str, Any]] = []
    with open(games_path, "a", encoding="utf-8") as f:

        def save(line: dict[str, Any]) -> None:
            f.write(json.dumps(line) + "\n")
            f.flush()  # a kill loses at most the line being written
            new.append(line)
            if bar is not None:
                bar.update(1)

        try:
            if jobs == 1:
                _init_worker(spec_of, bot_seed_of, forcing)
                for task in todo:
                    save(play_task(task))
            elif todo:
                context = multiprocessing.get_context("spawn")
                with context.Pool(
                    jobs, initializer=_init_pool_worker, initargs=(spec_of, bot_seed_of, forcing)
                ) as pool:
                    # chunksize 1: each game comes back, and is written, as soon as it ends
                    for line in pool.imap_unordered(play_task, todo, chunksize=1):
                        save(line)
        finally:
            if bar is not None:
                bar.close()

    all_games = list(done.values()) + new
    summary = summarize(all_games, config, confidence, bootstrap, bt_prior, anchor)
    summary["out_dir"] = str(out)
    write_summary(summary, out)
    if plot:
        plot_summary(summary, out / "summary.png")
    return summary


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        summary = run_tournament(
            args.specs,
            games=args.games,
            seed=args.seed,
            out_dir=args.out,
            jobs=args.jobs,
            duplicate=args.duplicate,
            forcing=args.forcing,
            gauntlet=args.gauntlet,
            progress=args.progress,
            confidence=args.confidence,
            bootstrap=args.bootstrap,
            bt_prior=args.bt_prior,
            anchor=args.anchor,
            plot=args.plot,
            verbose=True,
        )
    except SpecError as err:
        print(f"evaluate.py: {err}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"evaluate.py: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: games played so far are saved; run the same command again to resume", file=sys.stderr)
        return 130
    print(format_summary(summary))
    print(f"\nwrote {summary['out_dir']}/: config.json games.jsonl summary.json summary.csv ratings.csv"
          + (" summary.png" if args.plot else ""))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
