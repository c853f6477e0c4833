"""Shared by the dmcA scripts: deals and the compiled strength check."""

from __future__ import annotations

import numpy as np
import torch

from agents.scorer import CANDIDATE_SIZE, CHANNELS
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


class CandidateNet(torch.nn.Module):
    """The students of ``context.py``: ``base`` (each candidate alone, the scorer's shape), ``ctx``
    (each also sees the others: mean and max of their embeddings), ``table`` (each also sees the
    whole table through a position encoder)."""

    def __init__(self, kind: str, width: int = 256):
        super().__init__()
        self.kind = kind
        extra = {"base": 0, "ctx": 0, "table": 128}[kind]
        self.embed = torch.nn.Sequential(torch.nn.Linear(CANDIDATE_SIZE + extra, width), torch.nn.ReLU())
        self.head = torch.nn.Sequential(torch.nn.Linear(width * (3 if kind == "ctx" else 1), width), torch.nn.ReLU(),
                                        torch.nn.Linear(width, 1))  # fmt: skip
        if kind == "table":
            self.table = torch.nn.Sequential(torch.nn.Linear(CHANNELS * 40, 256), torch.nn.ReLU(),
                                             torch.nn.Linear(256, 128), torch.nn.ReLU())  # fmt: skip

    def forward(self, x, v, t=None):  # x (B, C, CANDIDATE_SIZE), v (B, C) bool, t (B, 720)
        if self.kind == "table":
            e = self.table(t)[:, None, :].expand(-1, x.shape[1], -1)
            x = torch.cat([x, e], -1)
        h = self.embed(x)
        if self.kind == "ctx":
            m = v[..., None].float()
            mean = (h * m).sum(1, keepdim=True) / m.sum(1, keepdim=True).clamp(min=1)
            mx = h.masked_fill(~v[..., None], -1e9).max(1, keepdim=True).values
            h = torch.cat([h, mean.expand_as(h), mx.expand_as(h)], -1)
        return self.head(h).squeeze(-1)
