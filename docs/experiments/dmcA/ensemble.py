"""Several scorers as one: their networks side by side in one wider network of the same file format
(first layers joined, later layers block-diagonal, the last averaging the scores), checked alone
and together.

    PYTHONPATH=. python docs/experiments/dmcA/ensemble.py A.npz B.npz ...
"""

from __future__ import annotations

import sys

import numpy as np

from agents.scorer import ActionScorer, load_scorer

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import check  # noqa: E402


def ensemble(scorers: list[ActionScorer]) -> ActionScorer:
    """The mean of the scorers' scores as one :class:`ActionScorer` (same number of layers each)."""
    layers, last = [], len(scorers[0].layers) - 1
    for i in range(last + 1):
        ws, bs = [s.layers[i][0] for s in scorers], [s.layers[i][1] for s in scorers]
        if i == 0:
            w = np.concatenate(ws, axis=1)
        else:
            w = np.zeros((sum(x.shape[0] for x in ws), sum(x.shape[1] for x in ws)), np.float32)
            r = c = 0
            for x in ws:
                w[r : r + x.shape[0], c : c + x.shape[1]] = x
                r, c = r + x.shape[0], c + x.shape[1]
        b = np.concatenate(bs)
        if i == last:
            w, b = w.sum(axis=1, keepdims=True) / len(scorers), np.array([b.mean()])
        layers.append((w.astype(np.float32), b.astype(np.float32)))
    return ActionScorer(layers)


if __name__ == "__main__":
    scorers = [load_scorer(p) for p in sys.argv[1:]]
    for path, s in zip(sys.argv[1:], scorers, strict=True):
        print(path, check(s))
    print("ensemble", check(ensemble(scorers)))
