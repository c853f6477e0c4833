"""A bot with noise: another bot's moves, with a uniformly random legal action now and then.

:class:`NoisyAgent` is the ``noisy:EPS:SPEC`` kind of the belief model's games
(:mod:`conquian_train.recipes.belief`): opponents that play like a known bot but not always.
"""

from __future__ import annotations

import numpy as np

from conquian_env.game import MELD

from .base import Agent, PlayerView
from .catalog import bot
from .params import Real, bounded

__all__ = ["NoisyAgent"]


@bot(
    "noisy",
    "another bot's moves, with a uniformly random legal one at an offer or a discard with probability EPS",
    positional="EPS:SPEC",
    needs="a noisy bot needs its chance of a random move and the bot it plays: noisy:EPS:SPEC, e.g. noisy:0.2:greedy",
)
class NoisyAgent(Agent):
    """``base``'s moves (a bot, or its spec, built with ``seed``), except at an offer or a discard
    with a choice, where with probability ``eps`` a uniformly random legal action is played (the
    base is still asked, so a bot that keeps state across a game keeps it)."""

    @bounded(eps=Real(0.0, 1.0))
    def __init__(self, base: Agent | str, eps: float, seed: int | None = None):
        if isinstance(base, str):
            from .registry import make_agent

            base = make_agent(base, seed)
        eps = float(eps)
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
