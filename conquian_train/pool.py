"""Training's opponent pool: which opponent plays each of the learner's new games.

:func:`parse_pool` reads ``SPEC@WEIGHT`` entries; :class:`OpponentPool` is the draw (weighted bots
and the learner's snapshots, ``self`` the newest and ``past`` an older one); :class:`BatchPool` is
that pool for the batched engine (:class:`conquian_env.sb3.ConquianVecEnv`): each new deal draws its
member, bot specs play in their batched form (:func:`agents.batched.make_batch_opponent`) and
snapshots (a :class:`~agents.networks.ppo.NumpyPolicy`) by sampling from their policy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from agents.base import BatchRandom
from agents.batched import make_batch_opponent
from agents.networks.batched import BatchPolicy
from agents.registry import make_agent
from conquian_env.vector import VectorGame

from .seeding import pool_member_seed

__all__ = ["BatchPool", "OpponentPool", "parse_pool"]


def parse_pool(entries: Sequence[str]) -> list[tuple[str, float]]:
    """``SPEC@WEIGHT`` entries (weight 1 when omitted) as (spec, weight) pairs; bot specs are checked.

    A spec is any bot spec, ``self`` (the newest learner snapshot) or ``past`` (an older one)."""
    pool = []
    for entry in entries:
        spec, _, weight_text = entry.rpartition("@") if "@" in entry else (entry, "", "1")
        try:
            weight = float(weight_text)
        except ValueError:
            raise ValueError(f"opponent {entry!r}: weight {weight_text!r} is not a number (SPEC@WEIGHT)") from None
        if not weight > 0 or not math.isfinite(weight):
            raise ValueError(f"opponent {entry!r}: the weight must be a positive number")
        if spec not in ("self", "past"):
            make_agent(spec, 0)
        pool.append((spec, weight))
    return pool


class OpponentPool:
    """Which member of a weighted pool plays each new game: the one policy of both pool front ends.

    ``entries``: ``(spec, weight)`` pairs (:func:`parse_pool`); ``bots``: the fixed members
    by spec, as the front end plays them; ``rng``: the draws; ``fallback()``: the bot that plays
    while no entry is usable (only ``self`` / ``past`` and too few snapshots).  ``snapshots``
    are the learner's, newest last (at most ``max_snapshots``): ``self`` is the newest,
    ``past`` an older one drawn uniformly, each usable once it exists.  ``counts`` tallies the
    games each entry got.
    """

    def __init__(
        self,
        entries: list[tuple[str, float]],
        bots: dict[str, Any],
        rng: np.random.Generator,
        fallback: Any,
        max_snapshots: int,
    ):
        if not entries:
            raise ValueError("the opponent pool is empty")
        self.entries = entries
        self.bots = bots
        self.rng = rng
        self.fallback = fallback
        self.max_snapshots = int(max_snapshots)
        self.snapshots: list[Any] = []
        self.counts: dict[str, int] = {}

    def add_snapshot(self, snapshot: Any) -> None:
        self.snapshots.append(snapshot)
        del self.snapshots[: -self.max_snapshots]

    def _usable(self) -> list[tuple[str, float]]:
        n = len(self.snapshots)
        usable = [(s, w) for s, w in self.entries if s in self.bots or (s == "self" and n) or (s == "past" and n > 1)]
        if not usable:
            self.bots.setdefault("random", self.fallback())
            usable = [("random", 1.0)]
        return usable

    def draw(self, games: int) -> list[Any]:
        """The members that play the next ``games`` new games (bots of ``bots`` or snapshots), in order."""
        usable = self._usable()
        weights = np.array([w for _, w in usable])
        picks = self.rng.choice(len(usable), size=games, p=weights / weights.sum())
        members: list[Any] = [None] * games
        for k in np.unique(picks):
            spec = usable[int(k)][0]
            chosen = np.flatnonzero(picks == k)
            if spec == "self":
                drawn = [self.snapshots[-1]] * len(chosen)
            elif spec == "past":
                older = self.rng.integers(len(self.snapshots) - 1, size=len(chosen))
                drawn = [self.snapshots[int(j)] for j in older]
            else:
                drawn = [self.bots[spec]] * len(chosen)
            for game, member in zip(chosen, drawn, strict=True):
                members[int(game)] = member
            self.counts[spec] = self.counts.get(spec, 0) + len(chosen)
        return members


class BatchPool:
    """The opponent pool (:class:`OpponentPool`) for the batched engine: each new deal draws its member.

    ``entries``: ``(spec, weight)`` pairs (:func:`parse_pool`); bot specs are built with
    :func:`make_batch_opponent`, snapshots (:meth:`add_snapshot`, a
    :class:`~agents.networks.ppo.NumpyPolicy`) play by sampling from their policy.
    """

    name = "pool"

    def __init__(self, entries: list[tuple[str, float]], seed: int | None = None, max_snapshots: int = 10):
        if not entries:
            raise ValueError("the opponent pool is empty")
        entries = [(str(spec), float(w)) for spec, w in entries]
        rng = np.random.default_rng(seed)
        bots = {
            spec: make_batch_opponent(spec, int(rng.integers(2**31)))
            for spec, _ in entries
            if spec not in ("self", "past")
        }
        self.pool = OpponentPool(entries, bots, rng, self._fallback, max_snapshots)
        self.member: np.ndarray = np.zeros(0, dtype=np.int64)  # per game: index into self._members
        self._members: list[Any] = []

    def _fallback(self) -> BatchRandom:
        return BatchRandom(int(self.pool.rng.integers(2**31)))

    @property
    def entries(self) -> list[tuple[str, float]]:
        return self.pool.entries

    @property
    def counts(self) -> dict[str, int]:
        return self.pool.counts

    @property
    def snapshots(self) -> list[BatchPolicy]:
        return self.pool.snapshots

    @property
    def bots(self) -> dict[str, Any]:
        return self.pool.bots

    @property
    def max_snapshots(self) -> int:
        return self.pool.max_snapshots

    def reseed(self, seed: int | None) -> None:
        """Start the draws of members and every member's own random numbers afresh from ``seed``."""
        self.pool.rng = np.random.default_rng(seed)
        for k, member in enumerate([*self.pool.bots.values(), *self.pool.snapshots]):
            reseed = getattr(member, "reseed", None)
            if reseed is not None:
                reseed(None if seed is None else pool_member_seed(seed, k))

    def add_snapshot(self, policy: Any) -> None:
        self.pool.add_snapshot(BatchPolicy(policy, deterministic=False, seed=int(self.pool.rng.integers(2**31))))

    def opponent_counts(self) -> dict[str, int]:
        return dict(self.pool.counts)

    def _member_index(self, bot: Any) -> int:
        for k, m in enumerate(self._members):
            if m is bot:
                return k
        self._members.append(bot)
        return len(self._members) - 1

    def reset_rows(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) and rows.max() >= len(self.member):
            grown = np.zeros(int(rows.max()) + 1, dtype=np.int64)
            grown[: len(self.member)] = self.member
            self.member = grown
        for row, bot in zip(rows, self.pool.draw(len(rows)), strict=True):
            self.member[row] = self._member_index(bot)
            reset = getattr(bot, "reset_rows", None)
            if reset is not None:
                reset(np.array([row]))
        if len(self._members) > 2 * (len(self.pool.bots) + self.pool.max_snapshots) + 2:  # forget retired snapshots
            used, self.member = np.unique(self.member, return_inverse=True)
            self._members = [self._members[int(k)] for k in used]

    def act_batch(self, games: VectorGame, rows: np.ndarray) -> np.ndarray:
        if len(self.member) < games.num_games:
            self.reset_rows(np.arange(len(self.member), games.num_games))
        out = np.empty(len(rows), dtype=np.int64)
        who = self.member[rows]
        for k in np.unique(who):
            sel = who == k
            out[sel] = self._members[int(k)].act_batch(games, rows[sel])
        return out

    def __repr__(self) -> str:
        return f"<BatchPool {self.entries}>"
