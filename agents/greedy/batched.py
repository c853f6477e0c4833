"""Greedy's batched forms, on the compiled greedy (:mod:`agents.greedy.greedy_kernels`).

:class:`BatchGreedy` is the greedy bot for many games at once (``greedy``'s
:meth:`~agents.base.Agent.batched` form: ``act_batch(games, rows) -> actions``, one action for the
player to move in each game ``rows[k]`` of a :class:`~conquian_env.vector.VectorGame`, read from
that player's information only); :data:`MELD_FEATURES` is the ``"meld"`` observation encoder
(:mod:`agents.scorer.features`) for :class:`conquian_env.vector_env.ConquianVectorEnv`.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from conquian_env.extras import missing
from conquian_env.layout import MELD_FEATURES as _MELD_LAYOUT

try:
    from conquian_env.vector import VectorGame
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "agents.greedy.batched (the batched greedy bot)") from None

__all__ = ["FEATURE_SIZE", "MELD_FEATURES", "BatchGreedy", "MeldFeatures"]

#: the length of the ``"meld"`` feature vector (:data:`agents.scorer.features.FEATURE_SIZE`)
FEATURE_SIZE = _MELD_LAYOUT.size


class BatchGreedy:
    """The greedy bot for many games at once (decisions equal :class:`agents.greedy.greedy.GreedyAgent`'s)."""

    name = "greedy"

    def act_batch(self, games: VectorGame, rows: np.ndarray) -> np.ndarray:
        from .greedy_kernels import greedy_actions  # compiled on first use, not when the bot is made

        return greedy_actions(games, rows)

    def __repr__(self) -> str:
        return "<BatchGreedy>"


class MeldFeatures:
    """The ``"meld"`` feature vectors (:mod:`agents.scorer.features`) of many games at once."""

    name = "meld"
    space = spaces.Box(-1.0, 1.0, (FEATURE_SIZE,), np.float32)

    def __call__(self, games: VectorGame, rows: np.ndarray, players: np.ndarray) -> np.ndarray:
        from .greedy_kernels import batch_features

        return batch_features(games, rows, players)


#: the ``"meld"`` observation encoder for the vector environments
MELD_FEATURES = MeldFeatures()
