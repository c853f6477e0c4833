"""What one player knows, as an object: the view bots and search get.

:class:`PlayerView` reads the live :class:`~conquian_env.game.GameState` but exposes only
that player's information: their hand, both melds, the dead pile, the face-up card,
the public history, sizes, the player's observation vector and the engine's legal moves.
The opponent's hand and the stock order are not reachable through it; ``determinize(rng)``
samples a full state consistent with what the player knows, for search.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .game import GAME_OVER, GameState
from .observation import encode
from .rules import Rules


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
    def rules(self) -> Rules:
        """The game's :class:`~conquian_env.rules.Rules` (public: both players play by them)."""
        return self._state.rules

    @property
    def forced(self) -> bool:
        """The meld being made was forced (a forced take, RULES.md section 7)."""
        return self._state.forced

    @property
    def to_move(self) -> int:
        """The seat to decide now (this player when ``legal_actions()`` is not empty)."""
        return self._state.player

    @property
    def my_turn(self) -> bool:
        """This player decides now (the game is not over and it is their move)."""
        return self._state.phase != GAME_OVER and self._state.player == self.player

    @property
    def move_count(self) -> int:
        """Decisions made so far in the game, by both players."""
        return self._state.move_count

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

    def observation(self) -> np.ndarray:
        """This player's observation vector (:func:`conquian_env.observation.encode`: what the
        environment gives them, built only from what they can see)."""
        return encode(self._state, self.player)

    def legal_actions(self) -> list[int]:
        return self._state.legal_actions() if self._state.player == self.player else []

    def legal_action_mask(self) -> int:
        return self._state.legal_action_mask() if self._state.player == self.player else 0

    def snapshot(self) -> PlayerView:
        """This view as it is now: a view of a copy of the game, which later moves do not change
        (for code that keeps positions to look at later, e.g. to label them in a batch)."""
        return PlayerView(self._state.clone(), self.player)

    def determinize(self, rng: Any) -> GameState:
        """A full game state sampled from what this player knows (hidden cards re-dealt)."""
        return self._state.determinize(self.player, rng)
