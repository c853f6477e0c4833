"""Bots that decide for many games at once, for the batched engine (:mod:`conquian_env.vector`).

A batched bot has ``act_batch(games, rows) -> actions``: one action for the player to
move in each game ``rows[k]`` of the :class:`~conquian_env.vector.VectorGame` ``games``,
read from that player's information only.  Optional ``reset_rows(rows)`` is called when
those rows get new deals.

======================  ================================================================
``BatchRandom``         uniform over the legal actions (seeded)
``BatchGreedy``         the greedy bot compiled (:mod:`agents.greedy.greedy_kernels`): the same
                        decision as :class:`agents.greedy.greedy.GreedyAgent` in every position
``BatchPolicy``         a :class:`~agents.networks.ppo.NumpyPolicy` (a trained model or a snapshot
                        of the learner): one forward pass for all the games
``PerGameOpponent``     any :class:`~agents.base.Agent` spec, one bot per game, played game
                        by game (for bots with no batched form, e.g. ``pimc``)
``BatchPool``           the training opponent pool (:class:`OpponentPool`: weighted bots and
                        learner snapshots, a member drawn for each new deal) for this engine;
                        ``PoolOpponent`` is the same pool as one per-game :class:`~agents.base.Agent`
======================  ================================================================

:func:`make_batch_opponent` builds one from a bot spec string: the batched form the bot's class
declares (:meth:`agents.base.Agent.batched`: ``random``, ``greedy``, ``ppo``, ``ppo:PATH`` have one),
or else a ``PerGameOpponent``.
``BatchRandom``, ``BatchGreedy``, ``BatchPolicy`` and :data:`MELD_FEATURES` are defined in
:mod:`agents.batch_forms` (which no bot's import reaches the pools through) and re-exported here.
:data:`MELD_FEATURES` is the ``"meld"`` observation encoder (:mod:`agents.scorer.features`) for
:class:`conquian_env.vector_env.ConquianVectorEnv`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from conquian_env.extras import missing

try:
    from conquian_env.kernels import GAME_OVER, PHASE, PLAYER, WINNER
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "agents.batched (the batched bots)") from None
from conquian_env.observation import action_mask, encode
from conquian_env.rules import Rules
from conquian_env.seeding import POOL_DRAWS, pool_bot_seed, pool_member_seed, stream_rng
from conquian_env.vector import VectorGame
from conquian_env.view import PlayerView

from .base import Agent
from .batch_forms import MELD_FEATURES, BatchGreedy, BatchPolicy, BatchRandom, MeldFeatures, policy_inputs

__all__ = [
    "BatchGreedy", "BatchPolicy", "BatchPool", "BatchRandom", "MELD_FEATURES", "MeldFeatures", "OpponentPool",
    "PerGameOpponent", "PoolOpponent", "make_batch_opponent", "parse_pool", "play_batch", "policy_inputs",
]  # fmt: skip


class PerGameOpponent:
    """One :class:`~agents.base.Agent` per game, built from ``spec``, each asked in turn."""

    def __init__(self, spec: str, seed: int | None = None):
        from .registry import make_agent

        self.spec = spec
        self._make = make_agent
        self.seed = 0 if seed is None else int(seed)
        self.bots: dict[int, Any] = {}
        self._deals = 0
        make_agent(spec)  # a bad spec fails here, not in the middle of training

    def reseed(self, seed: int | None) -> None:
        self.seed = 0 if seed is None else int(seed)
        self._deals = 0
        self.bots.clear()

    def reset_rows(self, rows: np.ndarray) -> None:
        for row in rows:
            self.bots.pop(int(row), None)

    def act_batch(self, games: VectorGame, rows: np.ndarray) -> np.ndarray:
        out = np.empty(len(rows), dtype=np.int64)
        for k, row in enumerate(rows):
            row = int(row)
            game = games.get_game(row)
            p = game.player
            bot = self.bots.get(row)
            if bot is None:
                self._deals += 1
                bot = self.bots[row] = self._make(self.spec, seed=self.seed + self._deals)
                bot.reset(p, self.seed + self._deals)
            out[k] = int(bot.act(encode(game, p), action_mask(game, p), PlayerView(game, p)))
        return out

    def __repr__(self) -> str:
        return f"<PerGameOpponent {self.spec}>"


def parse_pool(entries: Sequence[str]) -> list[tuple[str, float]]:
    """``SPEC@WEIGHT`` entries (weight 1 when omitted) as (spec, weight) pairs; bot specs are checked.

    A spec is any bot spec, ``self`` (the newest learner snapshot) or ``past`` (an older one)."""
    from .registry import make_agent

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


class PoolOpponent(Agent):
    """The opponent pool (:class:`OpponentPool`) as one per-game bot: each game it plays as a member.

    Bot specs are built with :func:`~agents.registry.make_agent`; snapshots
    (:meth:`add_snapshot`, a :class:`~agents.networks.ppo.NumpyPolicy`) play by sampling from their policy.
    """

    name = "pool"

    def __init__(self, entries: list[tuple[str, float]], seed: int, max_snapshots: int = 10):
        from .registry import make_agent

        entries = [(str(spec), float(w)) for spec, w in entries]
        bots = {
            spec: make_agent(spec, pool_bot_seed(seed, i))
            for i, (spec, _) in enumerate(entries)
            if spec not in ("self", "past")
        }
        self.pool = OpponentPool(
            entries, bots, stream_rng(seed, POOL_DRAWS), lambda: make_agent("random", 0), max_snapshots
        )
        self.current: Agent | None = None

    @property
    def entries(self) -> list[tuple[str, float]]:
        return self.pool.entries

    @property
    def counts(self) -> dict[str, int]:
        return self.pool.counts

    def add_snapshot(self, policy: Any) -> None:
        self.pool.add_snapshot(policy)

    def opponent_counts(self) -> dict[str, int]:
        return dict(self.pool.counts)

    def reset(self, player: int, seed: int | None = None) -> None:
        from .networks.ppo import NumpyPolicy, PolicyAgent

        member = self.pool.draw(1)[0]
        self.current = PolicyAgent(member, deterministic=False) if isinstance(member, NumpyPolicy) else member
        self.current.reset(player, seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        if self.current is None:
            raise RuntimeError("PoolOpponent.act before reset(): the game loop resets every bot first")
        return self.current.act(observation, action_mask, view)

    def __repr__(self) -> str:
        return f"<PoolOpponent {self.entries}>"


def play_batch(
    bot_a: Any,
    bot_b: Any,
    deals: np.ndarray,
    a_seats: np.ndarray,
    *,
    first: int = 0,
    rules: Rules | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Play ``len(deals)`` games at once between two batched bots.

    ``deals``: (G, 40) card permutations (:func:`conquian_env.vector.deal_permutation`);
    ``a_seats[g]``: the seat of ``bot_a`` in game ``g``.  Returns ``(a_scores, moves)``:
    1 for a win of ``bot_a``, 0.5 for a draw, 0 for a loss, and the decisions each game took.
    """
    deals = np.asarray(deals)
    n = len(deals)
    a_seats = np.asarray(a_seats, dtype=np.int64)
    if a_seats.shape != (n,) or ((a_seats != 0) & (a_seats != 1)).any():
        raise ValueError(f"a_seats must hold a seat, 0 or 1, for each of the {n} games")
    games = VectorGame(n, rules=rules, first=first, observations=False)
    games.reset(deals=deals)
    rows_all = np.arange(n)
    for bot in (bot_a, bot_b):
        reset = getattr(bot, "reset_rows", None)
        if reset is not None:
            reset(rows_all)
    state = games.state
    moves = np.zeros(n, dtype=np.int64)
    while True:
        active = state[:, PHASE] != GAME_OVER
        if not active.any():
            break
        acts = np.full(n, -1, dtype=np.int64)
        a_to_move = state[:, PLAYER] == a_seats
        for bot, mine in ((bot_a, a_to_move), (bot_b, ~a_to_move)):
            rows = np.flatnonzero(active & mine)
            if len(rows):
                acts[rows] = bot.act_batch(games, rows)
        result = games.step(acts, active, autoreset=False, observe=False)
        moves = np.where(result.dones, result.moves, moves)
    winners = state[:, WINNER]
    scores = np.where(winners < 0, 0.5, (winners == a_seats).astype(np.float64))
    return scores, moves


def make_batch_opponent(spec: str, seed: int | None = None) -> Any:
    """A batched bot from a spec: the batched form its kind's class declares
    (:meth:`agents.base.Agent.batched`, asked through the one registry), or one bot per game.

    ``seed`` (the environment's) seeds the bot unless the spec gives its own (``random:seed=5``,
    ``ppo:deterministic=false,seed=5``), which is kept: the environment's ``reset(seed=...)``
    then restarts the bot's random numbers from the spec's seed.  Per-game bots get the spec
    (and so its seed) and a per-game seed in ``reset``, as in the arena's game loop.
    """
    from .registry import KNOWN_BOTS, check_spec

    kind, positional, params = check_spec(spec)  # the parameters checked: a bad one fails here, not in a game
    if kind != "python":  # a python: class is built (its module run) only game by game
        try:
            made = KNOWN_BOTS[kind].factory().batched(positional, params, seed)
        except ValueError as err:
            raise ValueError(f"{err} in {spec!r}") from err
        if made is not None:
            return made
    return PerGameOpponent(spec, seed)


__all__ = [
    "MELD_FEATURES",
    "BatchGreedy",
    "BatchPolicy",
    "BatchPool",
    "BatchRandom",
    "MeldFeatures",
    "OpponentPool",
    "PerGameOpponent",
    "PoolOpponent",
    "make_batch_opponent",
    "parse_pool",
    "play_batch",
    "policy_inputs",
]
