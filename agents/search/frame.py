"""The frame the searches share: :class:`SearchBot`, the base of ``pimc`` and ``search``
(:mod:`agents.search.pimc`), ``ismcts-py`` (:mod:`agents.search.ismcts`) and ``rollout``
(:mod:`agents.search.rollout`)."""

from __future__ import annotations

import random

import numpy as np

from conquian_env.game import MELD
from conquian_env.seeding import bot_game_random

from ..base import Agent, PlayerView

__all__ = ["SearchBot"]


class SearchBot(Agent):
    """The frame the search bots share (``pimc``, ``ismcts-py``, ``rollout``).

    A ``random.Random`` re-seeded for each game from the game's seed and the bot's own
    ``seed``; decisions with one legal action answered at once; meld phases played by the
    greedy plan (``self._melder``, a :class:`~agents.greedy.greedy.GreedyAgent` the subclass
    makes); :meth:`search` for every other decision.  :meth:`clear_last` forgets the last
    search's statistics before each decision.
    """

    seed: int | None = None
    rng: random.Random

    def clear_last(self) -> None:
        """Forget the statistics of the last search (subclasses keep their own)."""

    def reset(self, player: int, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = bot_game_random(seed, self.seed)
        self._melder.reset(player, seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        self.clear_last()
        legal = view.legal_action_mask()
        if not legal:
            raise ValueError(f"{type(self).__name__} asked to act when it has no legal action")
        if legal & (legal - 1) == 0:
            return legal.bit_length() - 1  # the only legal action
        if view.phase == MELD:
            return self._melder.choose(view)
        return self.search(view)

    def search(self, view: PlayerView) -> int:
        """The action to play at the current decision of ``view``'s player."""
        raise NotImplementedError
