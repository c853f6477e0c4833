"""The batched forms of the bots that have one (:meth:`agents.base.Agent.batched`), apart from the
pools and the game loop of :mod:`agents.batched` (which re-exports them): a bot's class names its form
here, so that this module imports no bot and no bot imports the pools.

A batched bot has ``act_batch(games, rows) -> actions``: one action for the player to move in each
game ``rows[k]`` of the :class:`~conquian_env.vector.VectorGame` ``games``, read from that player's
information only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from conquian_env.extras import missing
from conquian_env.layout import MELD_FEATURES as _MELD_LAYOUT

try:
    from conquian_env.kernels import PLAYER
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "agents.batch_forms (the batched bots)") from None
from conquian_env.vector import VectorGame

#: the length of the ``"meld"`` feature vector (:data:`agents.scorer.features.FEATURE_SIZE`)
FEATURE_SIZE = _MELD_LAYOUT.size


class BatchRandom:
    """Uniform over the legal actions, from its own seeded generator.

    ``fixed_seed=True`` (a seed given in the spec, ``random:seed=5``): :meth:`reseed`
    restarts from that seed instead of the one it is handed (the environment's)."""

    name = "random"

    def __init__(self, seed: int | None = None, *, fixed_seed: bool = False):
        self.seed = seed
        self.fixed_seed = bool(fixed_seed)
        self.rng = np.random.default_rng(seed)

    def reseed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(self.seed if self.fixed_seed else seed)

    def act_batch(self, games: VectorGame, rows: np.ndarray) -> np.ndarray:
        return games.random_actions(self.rng, rows)

    def __repr__(self) -> str:
        return "<BatchRandom>"


class BatchGreedy:
    """The greedy bot for many games at once (decisions equal :class:`agents.greedy.greedy.GreedyAgent`'s)."""

    name = "greedy"

    def act_batch(self, games: VectorGame, rows: np.ndarray) -> np.ndarray:
        from .greedy.greedy_kernels import greedy_actions

        return greedy_actions(games, rows)

    def __repr__(self) -> str:
        return "<BatchGreedy>"


class MeldFeatures:
    """The ``"meld"`` feature vectors (:mod:`agents.scorer.features`) of many games at once."""

    name = "meld"
    space = spaces.Box(-1.0, 1.0, (FEATURE_SIZE,), np.float32)

    def __call__(self, games: VectorGame, rows: np.ndarray, players: np.ndarray) -> np.ndarray:
        from .greedy.greedy_kernels import batch_features

        return batch_features(games, rows, players)


#: the ``"meld"`` observation encoder for the vector environments
MELD_FEATURES = MeldFeatures()


def policy_inputs(games: VectorGame, rows: np.ndarray, features: str) -> tuple[np.ndarray, np.ndarray]:
    """What a policy reading ``features`` ("raw" or "meld") sees for the movers of ``rows``, and their masks."""
    players = games.state[rows, PLAYER]
    if features == "meld":
        _, masks = games.observe_rows(rows, players, masks_only=True)
        return MELD_FEATURES(games, rows, players), masks
    obs, masks = games.observe_rows(rows, players)
    return obs, masks


class BatchPolicy:
    """A :class:`~agents.networks.ppo.NumpyPolicy` deciding for all waiting games with one forward pass.

    ``deterministic``: the best legal action (default); otherwise sampled from the masked
    softmax with a seeded generator (``fixed_seed``: :meth:`reseed` restarts from ``seed``,
    as :class:`BatchRandom`'s).  Never an illegal action: a position where a legal logit is NaN
    or infinite gets :func:`agents.model_files.best_legal`'s move and a warning once.
    """

    name = "policy"

    def __init__(self, policy: Any, deterministic: bool = True, seed: int | None = None, *, fixed_seed: bool = False):
        self.policy = policy
        self.deterministic = bool(deterministic)
        self.seed = seed
        self.fixed_seed = bool(fixed_seed)
        self.rng = np.random.default_rng(seed)

    def reseed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(self.seed if self.fixed_seed else seed)

    def act_batch(self, games: VectorGame, rows: np.ndarray) -> np.ndarray:
        from .model_files import best_legal_rows

        obs, masks = policy_inputs(games, rows, self.policy.features)
        masks = masks.astype(bool)
        raw = self.policy.logits(obs)
        logits = np.where(masks, raw, -np.inf)
        if not self.deterministic:
            logits = logits + self.rng.gumbel(size=logits.shape)
        out = np.argmax(logits, axis=1).astype(np.int64)
        bad = ~np.isfinite(np.where(masks, raw, 0.0)).all(axis=1)
        if bad.any():  # a NaN or infinite legal logit: the best legal one, never an illegal action (warned once)
            out[bad] = best_legal_rows(raw[bad], masks[bad], repr(self))
        return out

    def __repr__(self) -> str:
        return f"<BatchPolicy {self.policy.features} deterministic={self.deterministic}>"
