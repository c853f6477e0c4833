"""Shared by the dmcA scripts: deals, the compiled strength check, the students and their fit."""

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


def soft_fit(net, forward, valid, q, train, epochs: int, temperature: float, after_epoch) -> None:
    """Fit ``net`` by cross-entropy on softmax(q / temperature) over each position's valid
    candidates: Adam at 1e-3 with a cosine schedule, batches of 256 positions of ``train`` in an
    order drawn from seed 0; ``forward(idx)`` gives the scores ``(len(idx), MAX_CANDIDATES)`` of the
    positions ``idx`` (a tensor of indexes); ``after_epoch(epoch)`` runs after each pass."""
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs * (len(train) // 256 + 1))
    rng = np.random.default_rng(0)
    V, Q = torch.from_numpy(valid), torch.from_numpy(q)  # noqa: N806
    for epoch in range(epochs):
        order = rng.permutation(train)
        for i in range(0, len(order), 256):
            b = torch.from_numpy(order[i : i + 256])
            v = V[b]
            logits = forward(b).masked_fill(~v, -1e9)
            target = torch.softmax((Q[b] / temperature).masked_fill(~v, -1e9), 1)
            loss = -(target * torch.log_softmax(logits, 1)).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        after_epoch(epoch)


def predict(forward, idx: np.ndarray) -> np.ndarray:
    """``forward``'s scores of the positions ``idx``, 4096 at a time, without gradients."""
    with torch.no_grad():
        return np.concatenate([forward(torch.from_numpy(idx[i : i + 4096])).numpy() for i in range(0, len(idx), 4096)])
