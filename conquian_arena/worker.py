"""A tournament's worker: the bots of one process and the one game a scheduled task plays.

Both tournament runners play their games here: the local one (:mod:`conquian_arena.tournament`,
in this process or in a pool of worker processes) and the Ray one
(:mod:`conquian_arena.ray_runner`, in Ray's worker processes).  A process is set up once
per tournament (:func:`setup`, or :func:`setup_pool_process` as a pool's initializer, or
:func:`ensure_setup`, which keeps bots already built for the same tournament); after that
:func:`play_task` plays one :class:`Task` and returns its ``games.jsonl`` line.  Each bot
is built once per process, the first time its label plays, and re-seeded by the game loop
before every game, so a game depends only on its task, whichever process plays it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from agents.base import Agent
from agents.registry import make_agent
from conquian_env.rules import Rules

from .match import deal_for_seed, play_game

#: the thread counts of numpy's BLAS (and OpenMP) that a pool's worker processes start with: one each,
#: the workers already fill the cores (two workers of two BLAS threads each on two cores made the
#: deep-sets scorer's forward pass 3-5 times slower)
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

#: the schedule's fields of a games.jsonl line; the rest are GameRecord's (and winner_label)
SCHEDULE_KEYS = ("index", "pair", "deal", "swap", "seats", "specs", "deal_seed", "game_seed")


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


def schedule_fields(task: Task) -> dict[str, Any]:
    """The schedule's part of a games.jsonl line (:data:`SCHEDULE_KEYS`), as JSON values."""
    return {
        "index": task.index,
        "pair": list(task.pair),
        "deal": task.deal,
        "swap": task.swap,
        "seats": list(task.seats),
        "specs": list(task.specs),
        "deal_seed": task.deal_seed,
        "game_seed": task.game_seed,
    }


class _Process:
    """What this process knows of the tournament it plays: the bots' specs and seeds by
    label, the variant, and the bots built so far."""

    def __init__(self, spec_of: dict[str, str | Agent], bot_seed_of: dict[str, int], rules: Rules):
        self.setup = (spec_of, bot_seed_of, rules)
        self.spec_of, self.bot_seed_of, self.rules = spec_of, bot_seed_of, rules
        self.bots: dict[str, Agent] = {}

    def bot(self, label: str) -> Agent:
        if label not in self.bots:
            spec = self.spec_of[label]
            self.bots[label] = make_agent(spec, self.bot_seed_of[label]) if isinstance(spec, str) else spec
        return self.bots[label]


_process: _Process | None = None


def setup(spec_of: dict[str, str | Agent], bot_seed_of: dict[str, int], rules: Rules) -> None:
    """Set this process up for a tournament: bots by label (``spec_of``), built lazily with
    the seeds ``bot_seed_of``, playing by ``rules`` (:class:`conquian_env.rules.Rules`).  Bots built before are dropped.
    A bot object in ``spec_of`` (training's policy, :func:`conquian_arena.pair.play_pair`)
    plays as it is, reset before every game like the others."""
    global _process
    _process = _Process(spec_of, bot_seed_of, rules)


def setup_pool_process(spec_of: dict[str, str | Agent], bot_seed_of: dict[str, int], rules: Rules) -> None:
    """:func:`setup` as a process pool's initializer: Ctrl-C is left to the main process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    setup(spec_of, bot_seed_of, rules)


def ensure_setup(spec_of: dict[str, str | Agent], bot_seed_of: dict[str, int], rules: Rules) -> None:
    """:func:`setup`, unless this process is set up for that same tournament already (its bots are kept)."""
    if _process is None or _process.setup != (spec_of, bot_seed_of, rules):
        setup(spec_of, bot_seed_of, rules)


def play_task(task: Task) -> dict[str, Any]:
    """Play one scheduled game in this process (set up first) and return its games.jsonl object."""
    if _process is None:
        raise RuntimeError("this process is not set up for a tournament: call conquian_arena.worker.setup first")
    hands, stock = deal_for_seed(task.deal_seed)
    agents = [_process.bot(task.seats[0]), _process.bot(task.seats[1])]
    record = play_game(agents, hands=hands, stock=stock, first=0, rules=_process.rules, seed=task.game_seed)
    line = schedule_fields(task)
    line.update(record.to_dict())
    line["winner_label"] = None if record.winner is None else task.seats[record.winner]
    return line


__all__ = [
    "SCHEDULE_KEYS",
    "Task",
    "ensure_setup",
    "map_jobs",
    "play_task",
    "process_pool",
    "schedule_fields",
    "setup",
    "setup_pool_process",
]


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Within: the :data:`BLAS_THREAD_VARIABLES` a user has not set are ``"1"`` in this process's
    environment, so that processes spawned now (a pool's workers import numpy afresh) each run one
    BLAS thread; the environment is restored after."""
    added = [name for name in BLAS_THREAD_VARIABLES if name not in os.environ]
    for name in added:
        os.environ[name] = "1"
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


@contextlib.contextmanager
def process_pool(processes: int, initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> Iterator[Any]:
    """The one process seam: a pool of ``processes`` spawned processes, each set up by
    ``initializer(*initargs)`` and running one BLAS thread (:func:`one_blas_thread`)."""
    context = multiprocessing.get_context("spawn")
    with one_blas_thread():
        pool = context.Pool(processes, initializer=initializer, initargs=initargs)
    with pool:
        yield pool


def worker_pool(jobs: int, initargs: tuple) -> contextlib.AbstractContextManager[Any]:
    """A tournament's :func:`process_pool`: ``jobs`` processes set up by :func:`setup_pool_process`
    with ``initargs``."""
    return process_pool(jobs, setup_pool_process, initargs)


def map_jobs(fn: Callable[[Any], Any], jobs: list, processes: int) -> list:
    """``[fn(j) for j in jobs]`` over a :func:`process_pool` of up to ``processes`` (in this process
    when that is 1); ``fn`` is a module-level function and each job pickles."""
    n = min(processes, len(jobs))
    if n <= 1:
        return [fn(j) for j in jobs]
    with process_pool(n) as pool:
        return pool.map(fn, jobs)
