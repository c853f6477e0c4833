"""Shared by the dmcA scripts: deals and the compiled strength check."""

from __future__ import annotations

import numpy as np

from agents.scorer_kernels import pack
from agents.selfplay_kernels import duplicate_score

#: the experiment's own tuning seed for the compiled check (never a claim: claims use conquian-evaluate on fresh seeds)
CHECK_SEED = 424242


def deals(n: int, seed: int) -> np.ndarray:
    """``n`` uniformly random deals (permutations of the 40 cards) from ``seed``."""
    return np.argsort(np.random.default_rng(seed).random((n, 40)), axis=1)


def check(scorer, games: int = 10000) -> tuple[float, float]:
    """The scorer against greedy over ``games`` duplicate deals (2 x games games) at CHECK_SEED."""
    score, half = duplicate_score(pack(scorer), deals(games, CHECK_SEED))
    return round(score, 4), round(half, 4)
