"""A bot spec as a batched bot, for the batched engine (:mod:`conquian_env.vector`).

A batched bot has ``act_batch(games, rows) -> actions``: one action for the player to
move in each game ``rows[k]`` of the :class:`~conquian_env.vector.VectorGame` ``games``,
read from that player's information only.  Optional ``reset_rows(rows)`` is called when
those rows get new deals.

:func:`make_batch_opponent` builds one from a bot spec string: the batched form the bot's class
declares (:meth:`agents.base.Agent.batched`), which lives in the bot's family (``random``:
:class:`agents.base.BatchRandom`; ``greedy``: :class:`agents.greedy.batched.BatchGreedy`, the
compiled greedy; ``ppo``, ``ppo:PATH``: :class:`agents.networks.batched.BatchPolicy`, one forward
pass for all the games), or else a :class:`PerGameOpponent`: any
:class:`~agents.base.Agent` spec, one bot per game, played game by game (e.g. ``pimc``).
:func:`make_batch_opponent` and
:data:`MELD_FEATURES` (greedy's ``"meld"`` features, :mod:`agents.greedy.batched`) are what the
package's entry points name (:mod:`conquian_env.plugins`).  The training opponent pool is
:mod:`conquian_train.pool`; two batched bots play each other in the arena
(:func:`conquian_arena.batch.play_batch`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conquian_env.extras import missing

try:
    from conquian_env.vector import VectorGame
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "agents.batched (the batched bots)") from None
from conquian_env.observation import action_mask, encode
from conquian_env.view import PlayerView

from . import registry
from .greedy.batched import MELD_FEATURES

__all__ = ["MELD_FEATURES", "PerGameOpponent", "make_batch_opponent"]


class PerGameOpponent:
    """One :class:`~agents.base.Agent` per game, built from ``spec``, each asked in turn."""

    def __init__(self, spec: str, seed: int | None = None):
        self.spec = spec
        self._make = registry.make_agent
        self.seed = 0 if seed is None else int(seed)
        self.bots: dict[int, Any] = {}
        self._deals = 0
        registry.make_agent(spec)  # a bad spec fails here, not in the middle of training

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


def make_batch_opponent(spec: str, seed: int | None = None) -> Any:
    """A batched bot from a spec: the batched form its kind's class declares
    (:meth:`agents.base.Agent.batched`, asked through the one registry), or one bot per game.

    ``seed`` (the environment's) seeds the bot unless the spec gives its own (``random:seed=5``,
    ``ppo:deterministic=false,seed=5``), which is kept: the environment's ``reset(seed=...)``
    then restarts the bot's random numbers from the spec's seed.  Per-game bots get the spec
    (and so its seed) and a per-game seed in ``reset``, as in the arena's game loop.
    """
    kind, positional, params = registry.check_spec(spec)  # the parameters checked: a bad one fails here, not in a game
    if kind != "python":  # a python: class is built (its module run) only game by game
        try:
            made = registry.KNOWN_BOTS[kind].factory().batched(positional, params, seed)
        except ValueError as err:
            raise ValueError(f"{err} in {spec!r}") from err
        if made is not None:
            return made
    return PerGameOpponent(spec, seed)
