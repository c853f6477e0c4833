"""A bot with noise: another bot's moves, with a uniformly random legal action now and then.

:class:`NoisyAgent` is the ``noisy:EPS:SPEC`` kind of the belief model's games
(:mod:`conquian_train.recipes.belief`): opponents that play like a known bot but not always.
"""

from __future__ import annotations

import numpy as np

from conquian_env.game import MELD

from .base import Agent, PlayerView

__all__ = ["NoisyAgent"]


class NoisyAgent(Agent):
    """``base``'s moves, except at an offer or a discard with a choice, where with probability
    ``eps`` a uniformly random legal action is played (the base is still asked, so a bot that
    keeps state across a game keeps it)."""

    def __init__(self, base: Agent, eps: float, seed: int | None = None):
        if not (isinstance(eps, float) and 0.0 <= eps <= 1.0):
            raise ValueError(f"noisy: EPS must be a number in [0, 1], got {eps!r}")
        self.base, self.eps, self.seed = base, eps, seed
        self.name = f"noisy:{eps}:{base.name}"
        self.rng = np.random.default_rng(seed)

    def reset(self, player: int, seed: int | None = None) -> None:
        self.base.reset(player, seed)
        self.rng = np.random.default_rng([0 if seed is None else seed, 0 if self.seed is None else self.seed])

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        action = self.base.act(observation, action_mask, view)
        legal = np.flatnonzero(action_mask)
        if view.phase != MELD and len(legal) > 1 and self.rng.random() < self.eps:
            return int(legal[self.rng.integers(len(legal))])
        return action
