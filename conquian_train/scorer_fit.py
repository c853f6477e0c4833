"""Fitting the action scorer (:mod:`agents.scorer.scorer`) to the search's values.

The labels are expert iteration's (:mod:`conquian_train.recipes.exit`): for each searched position
the value of every legal action.  The scorer's scores over a position's candidates are a
softmax; the target is the softmax of the values at ``temperature``, so near-ties share the
target and a clear best move gets it all.  A fifth of the games (by game id, never a position
of a training game) is held out; each epoch is measured there by the *regret* of the scorer's
choice (best value minus the chosen move's value, per decision) and the epoch with the lowest
held-out regret is kept.  Greedy's regret on the same positions is printed beside it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.scorer.scorer import CANDIDATE_SIZE, GREEDY_SLOT, ActionScorer, candidate_features

from .imitation import ImitationData

__all__ = [
    "ScorerSettings",
    "candidate_scores",
    "fit_epoch",
    "ranking_loss",
    "fit_scorer",
    "initial_scorer",
    "network_layers",
    "network_scores",
    "regret",
    "scorer_from_network",
    "scorer_network",
    "scorer_positions",
]


@dataclass(frozen=True)
class ScorerSettings:
    hidden: tuple[int, ...] = (128, 128)
    epochs: int = 8
    lr: float = 1e-3
    batch: int = 256
    temperature: float = 0.05
    holdout: int = 5  # games with id % holdout == 0 are held out (0: none)
    # deep sets: this hidden layer's outputs joined by their mean and max over the position's candidates
    pool_after: int | None = None

    def __post_init__(self) -> None:
        if not self.hidden or any(not isinstance(h, int) or h < 1 for h in self.hidden):
            raise ValueError(f"hidden must be positive layer sizes, got {self.hidden!r}")
        if self.pool_after is not None and (
            isinstance(self.pool_after, bool) or not isinstance(self.pool_after, int)
            or not 0 <= self.pool_after < len(self.hidden)
        ):  # fmt: skip
            raise ValueError(f"pool_after must be a hidden layer's index (0 .. {len(self.hidden) - 1}) or None, "
                             f"got {self.pool_after!r}")  # fmt: skip
        if not isinstance(self.epochs, int) or self.epochs < 1:
            raise ValueError(f"epochs must be a positive integer, got {self.epochs!r}")
        if not self.lr > 0 or not self.temperature > 0:
            raise ValueError(f"lr and temperature must be positive, got {self.lr!r}, {self.temperature!r}")
        if not isinstance(self.batch, int) or self.batch < 1:
            raise ValueError(f"batch must be a positive integer, got {self.batch!r}")
        if not isinstance(self.holdout, int) or self.holdout < 0 or self.holdout == 1:
            raise ValueError(f"holdout must be 0 (none) or at least 2, got {self.holdout!r}")


def scorer_positions(data: ImitationData) -> dict[str, np.ndarray]:
    """The searched positions of ``data`` with a choice among candidates, as candidate arrays:
    ``x``, ``valid``, ``q`` (the value of each candidate), ``greedy`` (greedy's candidate), ``game``."""
    q = data.q.astype(np.float32)
    searched = ~np.isnan(q).all(axis=1)
    x, valid, actions = candidate_features(data.obs[searched].astype(np.float32), data.masks[searched])
    keep = valid.sum(axis=1) > 1
    x, valid, actions = x[keep], valid[keep], actions[keep]
    rows = np.flatnonzero(searched)[keep]
    qv = np.where(valid, np.take_along_axis(q[rows], np.maximum(actions, 0), axis=1), 0.0)
    if np.isnan(qv[valid]).any():
        raise ValueError("a searched position lacks the value of a legal candidate")
    greedy = np.where(valid, x[..., GREEDY_SLOT], -1.0).argmax(axis=1)
    return {"x": x, "valid": valid, "q": qv.astype(np.float32), "greedy": greedy, "game": data.game[rows]}


def regret(scores: np.ndarray, valid: np.ndarray, q: np.ndarray) -> float:
    """Mean value lost by picking each row's highest-scored valid candidate instead of its best
    (``scores``, ``valid``, ``q``: one row per position, one column per candidate)."""
    pick = np.where(valid, scores, -np.inf).argmax(axis=1)
    best = np.where(valid, q, -np.inf).max(axis=1)
    return float((best - q[np.arange(len(q)), pick]).mean()) if len(q) else float("nan")


def scorer_network(sizes: tuple[int, ...], seed: int, pool_after: int | None = None):
    """The torch network of layer ``sizes`` (ReLU between), its weights drawn under ``seed``; with
    ``pool_after`` a deep-sets network (:class:`agents.scorer.scorer.ActionScorer`'s): layer ``pool_after``'s
    outputs joined by their mean and maximum over the position's valid candidates.  Called as
    :func:`network_scores` does: ``(B, C, CANDIDATE_SIZE)`` inputs and ``(B, C)`` valid flags."""
    import torch

    torch.manual_seed(seed)
    if pool_after is None:
        layers: list[torch.nn.Module] = []
        for i in range(len(sizes) - 1):
            layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
            if i < len(sizes) - 2:
                layers.append(torch.nn.ReLU())
        return torch.nn.Sequential(*layers)
    return _pooled_network(sizes, pool_after)


def _pooled_network(sizes: tuple[int, ...], pool_after: int):
    import torch

    class PooledScorer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pool_after = pool_after
            ins = [a * (3 if i - 1 == pool_after else 1) for i, a in enumerate(sizes[:-1])]
            self.linears = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(ins, sizes[1:], strict=True))

        def forward(self, x, valid):
            last = len(self.linears) - 1
            for i, lin in enumerate(self.linears):
                x = lin(x)
                if i < last:
                    x = torch.relu(x)
                if i == self.pool_after:
                    m = valid[..., None]
                    mean = (x * m).sum(-2, keepdim=True) / m.sum(-2, keepdim=True).clamp(min=1)
                    top = x.masked_fill(~m, 0.0).max(-2, keepdim=True).values  # x >= 0 after the ReLU
                    x = torch.cat([x, mean.expand_as(x), top.expand_as(x)], -1)
            return x.squeeze(-1)

    return PooledScorer()


def network_scores(net, x, valid):
    """``net``'s scores ``(B, C)`` of candidates ``x`` ``(B, C, CANDIDATE_SIZE)`` (torch tensors)."""
    return net(x).squeeze(-1) if not hasattr(net, "pool_after") else net(x, valid)


def candidate_scores(net, x, valid, idx: np.ndarray, chunk: int) -> np.ndarray:
    """``net``'s scores ``(len(idx), C)`` of the positions ``idx`` of the candidate tensors ``x`` and
    ``valid``, ``chunk`` positions at a time, without gradients."""
    import torch

    with torch.no_grad():
        parts = [torch.from_numpy(idx[i : i + chunk]) for i in range(0, len(idx), chunk)]
        return np.concatenate([network_scores(net, x[p].float(), valid[p]).numpy() for p in parts]
                              or [np.zeros((0, x.shape[1]), np.float32)])  # fmt: skip


def fit_epoch(opt, order: np.ndarray, batch: int, loss_of: Callable[[Any], Any],
              lr: Callable[[int], float] | None = None, step: int = 0) -> tuple[float, int]:  # fmt: skip
    """The one fit loop of the recipes' networks: one pass of the optimizer ``opt`` over the rows
    ``order``, ``batch`` at a time, each step minimizing ``loss_of(rows)`` (a torch scalar of those
    rows, a tensor of their indices).  ``lr(step)``: the learning rate of each step (None: ``opt``'s
    own), counted on from ``step``.  The sum of the batches' losses and the number of batches."""
    import torch

    total, batches = 0.0, 0
    for i in range(0, len(order), batch):
        if lr is not None:
            for group in opt.param_groups:
                group["lr"] = lr(step + batches)
        loss = loss_of(torch.from_numpy(order[i : i + batch]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total, batches = total + float(loss.detach()), batches + 1
    return total, batches


def ranking_loss(net, x, valid, q, temperature: float) -> Callable[[Any], Any]:
    """The scorer's loss of a batch of positions (for :func:`fit_epoch`): the cross-entropy of
    ``net``'s softmax over each position's valid candidates against the softmax of their values
    ``q`` at ``temperature``."""
    import torch

    def loss_of(b):
        v = valid[b]
        logits = network_scores(net, x[b].float(), v).masked_fill(~v, -1e9)
        target = torch.softmax((q[b] / temperature).masked_fill(~v, -1e9), dim=1)
        return -(target * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()

    return loss_of


def network_layers(net) -> list:
    """The ``torch.nn.Linear`` layers of a network of :func:`scorer_network`, in order."""
    return list(net.linears) if hasattr(net, "pool_after") else [m for m in net if hasattr(m, "weight")]


def scorer_from_network(net) -> ActionScorer:
    """The :class:`agents.scorer.scorer.ActionScorer` of a torch network built by :func:`scorer_network`."""
    layers = [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy()) for m in network_layers(net)]
    return ActionScorer(layers, pool_after=getattr(net, "pool_after", None))


def initial_scorer(hidden: tuple[int, ...], seed: int, pool_after: int | None = None) -> ActionScorer:
    """The untrained scorer: the random weights :func:`fit_scorer` draws under ``seed`` when it
    starts from none (so fitting from this scorer or from nothing gives the same network)."""
    return scorer_from_network(scorer_network((CANDIDATE_SIZE, *hidden, 1), seed, pool_after))


def fit_scorer(
    data: ImitationData,
    settings: ScorerSettings,
    seed: int,
    start: ActionScorer | None = None,
    log: Callable[[str], None] | None = None,
    stage: str = "fit",
) -> tuple[ActionScorer, list[dict[str, Any]]]:
    """A scorer fitted to ``data``'s searched positions (from ``start``'s weights when given, else
    random ones), and one report row per epoch; the returned scorer is the kept epoch's."""
    import torch

    s = settings
    pos = scorer_positions(data)
    n = len(pos["q"])
    if n == 0:
        raise ValueError("no searched position with a choice to fit the scorer on")
    held = (pos["game"] % s.holdout == 0) if s.holdout else np.zeros(n, bool)
    if held.all():
        held[:] = False
    train_idx, test_idx = np.flatnonzero(~held), np.flatnonzero(held)
    sizes = (pos["x"].shape[-1], *s.hidden, 1)
    net = scorer_network(sizes, seed, s.pool_after)
    linears = network_layers(net)
    if start is not None:
        if [w.shape for w, _ in start.layers] != [tuple(m.weight.shape[::-1]) for m in linears] or getattr(
            start, "pool_after", None
        ) != s.pool_after:
            raise ValueError(
                f"the start scorer's layers {[w.shape for w, _ in start.layers]} (pooled after "
                f"{getattr(start, 'pool_after', None)}) do not fit {sizes} pooled after {s.pool_after}"
            )
        with torch.no_grad():
            for lin, (w, b) in zip(linears, start.layers, strict=True):
                lin.weight.copy_(torch.from_numpy(w.T.copy()))
                lin.bias.copy_(torch.from_numpy(b))
    opt = torch.optim.Adam(net.parameters(), lr=s.lr)
    x, valid, q = torch.from_numpy(pos["x"]), torch.from_numpy(pos["valid"]), torch.from_numpy(pos["q"])

    def export() -> ActionScorer:
        return scorer_from_network(net)

    def measure(idx: np.ndarray) -> float:
        return regret(candidate_scores(net, x, valid, idx, 8192), pos["valid"][idx], pos["q"][idx])

    greedy_scores = np.eye(x.shape[1], dtype=np.float32)[pos["greedy"]]
    greedy_held = regret(greedy_scores[test_idx], pos["valid"][test_idx], pos["q"][test_idx])
    eval_idx = test_idx if len(test_idx) else train_idx
    rows: list[dict[str, Any]] = []
    best, kept = measure(eval_idx), export()
    rng = np.random.default_rng(seed)
    loss_of = ranking_loss(net, x, valid, q, s.temperature)
    for epoch in range(s.epochs):
        t0 = time.perf_counter()
        total, batches = fit_epoch(opt, rng.permutation(train_idx), s.batch, loss_of)
        held_regret = measure(eval_idx)
        keep = held_regret < best
        if keep:
            best, kept = held_regret, export()
        row = {"stage": stage, "epoch": epoch, "positions": len(train_idx), "held_out": len(test_idx),
               "loss": round(total / max(batches, 1), 4), "train_regret": round(measure(train_idx[:20000]), 5),
               "held_out_regret": round(held_regret, 5), "greedy_held_out_regret": round(greedy_held, 5),
               "kept": keep, "s": round(time.perf_counter() - t0, 1)}  # fmt: skip
        rows.append(row)
        if log is not None:
            log(f"{stage} epoch {epoch}: held-out regret {held_regret:.4f} (greedy {greedy_held:.4f}), "
                f"train {row['train_regret']:.4f}{' kept' if keep else ''}")  # fmt: skip
    kept.meta = {"positions": int(len(train_idx)), "held_out_regret": round(best, 5),
                 "greedy_held_out_regret": round(greedy_held, 5), "temperature": s.temperature}  # fmt: skip
    return kept, rows
