"""One pair of bots on a tournament's deals: training's evaluation.

:func:`play_pair` plays the games ``conquian-evaluate A B --games N --seed S`` would (the same
schedule and seeds, :mod:`conquian_arena.schedule`), on the batched engine
(:func:`conquian_arena.batch.play_batch`) or game by game in worker processes; :func:`pair_score`
is A's record in them, with its interval over deals.
"""

from __future__ import annotations

import math
from typing import Any

from agents.base import Agent
from conquian_env.rules import Rules, resolve

from . import worker
from .match import deal_for_seed
from .schedule import bot_labels, bot_seeds, games_per_pair, make_schedule
from .worker import Task, play_task


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
    labels = bot_labels([label_a, b])
    config = {"labels": labels, "bot_specs": [label_a, b], "gauntlet": None, "duplicate": True, "seed": seed,
              "games": games_per_pair(games, duplicate=True)}  # fmt: skip
    tasks = make_schedule(config)
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
