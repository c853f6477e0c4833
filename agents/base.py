"""The one interface every bot implements, and the player-side view search bots use.

A bot is an :class:`Agent`::

    class MyBot(Agent):
        name = "mybot"
        def act(self, observation, action_mask, view):
            return int(np.flatnonzero(action_mask)[0])

``observation`` and ``action_mask`` are exactly what the environment gives the player
(:mod:`conquian_env.observation`); ``view`` is a :class:`PlayerView`: the same
information as named attributes plus the engine's legal moves and ``determinize`` for
search.  It exposes nothing the player could not see: not the opponent's hand, not the
stock order.  (Python cannot enforce privacy: a bot that reaches into ``view._state``
cheats; the bots here never do, and the ISMCTS test checks it.)

``reset(player, seed)`` is called before every game.  For reproducible tournaments a
bot's play must depend only on that seed (and its constructor arguments), not on
earlier games: re-seed any random generator there.  ``act`` must return an ``int``
action id; anything else (a float, a bool, an illegal id), or an exception, loses the
game in :func:`conquian_arena.match.play_game`.  A player gives up by raising
:class:`Resign` from ``act`` (the human front end does when the person quits); a bot that
knows how it failed raises :class:`BotFailure` (the ``exec:`` bots, :mod:`agents.program`:
a program that timed out, exited or answered garbage).  ``end_game(player, winner, failure)``
is called after every game, the bot's last word on it (the default does nothing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from conquian_env.seeding import bot_game_rng
from conquian_env.view import PlayerView

from .catalog import bot

if TYPE_CHECKING:
    from conquian_env.vector import VectorGame

__all__ = ["Agent", "BatchRandom", "BotFailure", "PlayerView", "RandomAgent", "Resign", "SeededBatch"]


class Resign(Exception):  # noqa: N818 - a player's decision, not an error
    """Raised from :meth:`Agent.act` to give the game up: the game ends at once and the
    other seat wins (recorded as a failure of kind ``"quit"``, with this message)."""


class BotFailure(Exception):  # noqa: N818 - the record's failure, not an error of the caller's
    """Raised from :meth:`Agent.act` (or ``reset``) by a bot that failed in a way it can name: the
    game is lost and recorded with ``kind`` (``"crash"``: no answer; ``"illegal"``: an answer that
    is no action) and this message, which starts with the reason (``timeout: ...``)."""

    def __init__(self, kind: str, message: str):
        if kind not in ("crash", "illegal"):
            raise ValueError(f"a bot failure is a 'crash' or 'illegal', got {kind!r}")
        super().__init__(message)
        self.kind = kind


class Agent:
    """Base class of all bots.  Subclasses implement :meth:`act`."""

    #: short name used in tables and specs
    name: str = "agent"

    def reset(self, player: int, seed: int | None = None) -> None:
        """Called before each game with the seat (0 or 1) and a per-game seed."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        raise NotImplementedError

    def end_game(self, player: int, winner: int | None, failure: dict[str, Any] | None) -> None:
        """Called after each game the bot played in seat ``player``: the winning seat (None for a
        draw) and the failure that ended it (``{"seat", "kind", "message"}``, or None).  Anything it
        raises is ignored: the game is over."""

    @classmethod
    def batched(cls, path: str | None, params: dict[str, Any], seed: int | None) -> Any | None:
        """This kind's batched form (``act_batch(games, rows)``, in its family: ``BatchRandom`` here,
        :mod:`agents.greedy.batched`, :mod:`agents.networks.batched`) for a spec's
        path and checked parameters, seeded by ``seed`` unless the spec gives its own ``seed``; None
        (the default): the spec is played game by game, one bot per game.  A bot with a batched form
        overrides it (:func:`agents.batched.make_batch_opponent` asks every kind here)."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


@bot("random", "uniform over legal actions")
class RandomAgent(Agent):
    """Uniform over the legal actions, seeded by ``seed`` (and re-seeded per game)."""

    name = "random"

    def __init__(self, seed: int | None = None):
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def reset(self, player: int, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = bot_game_rng(seed, self.seed)

    @classmethod
    def batched(cls, path: str | None, params: dict[str, Any], seed: int | None) -> Any | None:
        if set(params) - {"seed"}:
            return None  # played game by game, where the unknown parameter is refused
        return BatchRandom(params.get("seed", seed), fixed_seed="seed" in params)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        legal = np.flatnonzero(action_mask)
        return int(legal[self.rng.integers(len(legal))])


class SeededBatch:
    """What a batched bot that draws random numbers shares: its generator ``rng``, seeded by ``seed``.

    ``fixed_seed=True`` (a seed given in the spec, ``random:seed=5``): :meth:`reseed`
    restarts from that seed instead of the one it is handed (the environment's)."""

    def __init__(self, seed: int | None = None, *, fixed_seed: bool = False):
        self.seed = seed
        self.fixed_seed = bool(fixed_seed)
        self.rng = np.random.default_rng(seed)

    def reseed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(self.seed if self.fixed_seed else seed)


class BatchRandom(SeededBatch):
    """The random bot for many games at once (:meth:`RandomAgent.batched`): uniform over the legal
    actions of the games ``rows`` of a :class:`~conquian_env.vector.VectorGame`, from its own seeded
    generator (:class:`SeededBatch`)."""

    name = "random"

    def act_batch(self, games: VectorGame, rows: np.ndarray) -> np.ndarray:
        return games.random_actions(self.rng, rows)

    def __repr__(self) -> str:
        return "<BatchRandom>"
