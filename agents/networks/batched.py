"""The policy's batched form: a :class:`~agents.networks.ppo.NumpyPolicy` (a trained model or a
snapshot of the learner) deciding for many games at once with one forward pass (``ppo``'s
:meth:`~agents.base.Agent.batched` form, and the training pool's snapshots)."""

from __future__ import annotations

from typing import Any

import numpy as np

from conquian_env.extras import missing

try:
    from conquian_env.kernels import PLAYER
    from conquian_env.potential import POTENTIAL_OBSERVATION
    from conquian_env.vector import VectorGame
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "agents.networks.batched (the batched policy)") from None

from ..base import SeededBatch
from ..greedy.batched import MELD_FEATURES
from ..model_files import best_legal_rows

__all__ = ["BatchPolicy", "policy_inputs"]


def policy_inputs(games: VectorGame, rows: np.ndarray, features: str) -> tuple[np.ndarray, np.ndarray]:
    """What a policy reading ``features`` ("raw", "potential" or "meld") sees for the movers of ``rows``, and
    their masks."""
    players = games.state[rows, PLAYER]
    if features == "potential":
        obs, masks = games.observe_rows(rows, players)
        return POTENTIAL_OBSERVATION.extend(games, rows, players, obs), masks
    if features == "meld":
        _, masks = games.observe_rows(rows, players, masks_only=True)
        return MELD_FEATURES(games, rows, players), masks
    obs, masks = games.observe_rows(rows, players)
    return obs, masks


class BatchPolicy(SeededBatch):
    """A :class:`~agents.networks.ppo.NumpyPolicy` deciding for all waiting games with one forward pass.

    ``deterministic``: the best legal action (default); otherwise sampled from the masked
    softmax with a seeded generator (:class:`~agents.base.SeededBatch`: ``fixed_seed``,
    :meth:`reseed`).  Never an illegal action: a position where a legal logit
    is NaN or infinite gets :func:`agents.model_files.best_legal`'s move and a warning once.
    """

    name = "policy"

    def __init__(self, policy: Any, deterministic: bool = True, seed: int | None = None, *, fixed_seed: bool = False):
        super().__init__(seed, fixed_seed=fixed_seed)
        self.policy = policy
        self.deterministic = bool(deterministic)

    def act_batch(self, games: VectorGame, rows: np.ndarray) -> np.ndarray:
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
