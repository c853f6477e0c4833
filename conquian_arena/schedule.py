"""A tournament's schedule and seeds: which games are played, by whom, from which deal and seed.

:func:`make_schedule` lists every game of a tournament's config (pair by pair, deal by deal) as a
:class:`~conquian_arena.worker.Task`; :func:`deal_seed`, :func:`game_seed` and :func:`bot_seeds`
derive every seed from the tournament's (:mod:`conquian_env.seeding`); :func:`bot_labels` names the
bots in tables (:func:`short_name`).  The tournament (:mod:`conquian_arena.tournament`) and
training's pair play (:mod:`conquian_arena.pair`) schedule their games here.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from agents.registry import SpecError, make_agent, parse_spec, takes_path
from conquian_env.seeding import TOURNAMENT_BOT, TOURNAMENT_DEAL, TOURNAMENT_GAME, derive_seed

from .worker import Task


def deal_seed(seed: int, deal: int) -> int:
    return derive_seed(seed, TOURNAMENT_DEAL, deal)


def game_seed(seed: int, deal: int, swap: int) -> int:
    return derive_seed(seed, TOURNAMENT_GAME, deal, swap)


def short_name(spec: str) -> str:
    """A table-friendly name, the spec read by the registry's parser (:func:`agents.registry.parse_spec`):
    ``python:pkg.mod:Class,k=v`` -> ``Class,k=v``; a model or program path by its file name
    (``ppo:dir/m.zip`` -> ``ppo:m.zip``, ``exec:dir/bot,time=1`` -> ``exec:bot,time=1``); any other
    spec (and one the parser refuses, refused by name where its bot is built) as it is written."""
    spec = spec.strip()
    try:
        kind, positional, _ = parse_spec(spec)
    except SpecError:
        return spec
    rest = spec.partition(":")[2]
    if kind == "python":
        return rest.partition(":")[2]
    if not takes_path(kind):
        return spec
    params = rest.partition(",")[2] if positional else rest  # the parameters as written
    name = f"{kind}:{Path(positional).name or positional}" if positional else kind
    return f"{name},{params}" if params else name


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
