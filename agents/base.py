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
stock order.  ``reset(player, seed)`` is called before every game.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conquian_env.game import GameState


class PlayerView:
    """What one player knows, read from the live game without exposing hidden cards."""

    __slots__ = ("_state", "player")

    def __init__(self, state: GameState, player: int):
        self._state = state
        self.player = player

    # own and public information (masks are card bit masks, see conquian_env.cards)
    @property
    def hand(self) -> int:
        return self._state.hands[self.player]

    @property
    def meld(self) -> int:
        return self._state.melds[self.player]

    @property
    def opponent_meld(self) -> int:
        return self._state.melds[1 - self.player]

    @property
    def opponent_hand_size(self) -> int:
        return self._state.hands[1 - self.player].bit_count()

    @property
    def dead(self) -> int:
        return self._state.dead

    @property
    def face_up(self) -> int:
        return self._state.face_up

    @property
    def face_up_source(self) -> int:
        return self._state.source

    @property
    def face_up_owner(self) -> int:
        return self._state.owner

    @property
    def passed(self) -> bool:
        return self._state.passed

    @property
    def chosen(self) -> int:
        return self._state.chosen

    @property
    def phase(self) -> int:
        return self._state.phase

    @property
    def forcing(self) -> bool:
        return self._state.forcing

    @property
    def stock_left(self) -> int:
        return self._state.stock_left

    def discards(self, player: int) -> int:
        return self._state.discards[player]

    def refusals(self, player: int) -> int:
        return self._state.refusals[player]

    def unseen(self) -> int:
        """Cards this player cannot see (opponent's hidden hand cards and the stock)."""
        return self._state.unseen_cards(self.player)

    def legal_actions(self) -> list[int]:
        return self._state.legal_actions() if self._state.player == self.player else []

    def legal_action_mask(self) -> int:
        return self._state.legal_action_mask() if self._state.player == self.player else 0

    def determinize(self, rng: Any) -> GameState:
        """A full game state sampled from what this player knows (hidden cards re-dealt)."""
        return self._state.determinize(self.player, rng)


class Agent:
    """Base class of all bots.  Subclasses implement :meth:`act`."""

    #: short name used in tables and specs
    name: str = "agent"

    def reset(self, player: int, seed: int | None = None) -> None:
        """Called before each game with the seat (0 or 1) and a per-game seed."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class RandomAgent(Agent):
    """Uniform over the legal actions, seeded by ``seed`` (and re-seeded per game)."""

    name = "random"

    def __init__(self, seed: int | None = None):
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def reset(self, player: int, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng([seed, 0 if self.seed is None else self.seed])

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        legal = np.flatnonzero(action_mask)
        return int(legal[self.rng.integers(len(legal))])
