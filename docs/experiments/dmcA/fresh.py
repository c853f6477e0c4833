"""The page's models again on a fresh seed (77031: deals no fit, choice or check here used), by the
compiled check: 10,000 duplicate deals against greedy.

    PYTHONPATH=. python docs/experiments/dmcA/fresh.py
"""

from __future__ import annotations

import sys

from agents.scorer import DEFAULT_SCORER, load_scorer
from agents.scorer_kernels import pack
from agents.selfplay_kernels import duplicate_score

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import deals  # noqa: E402
from ensemble import ensemble  # noqa: E402

FRESH = 77031
MODELS = {
    "true-hand labels, 12k games": "runs/post/true_scorer.npz",
    "uniform labels, 3k games": "runs/post/uniform_g3k_scorer.npz",
    "uniform labels, 6k games": "runs/post/uniform_g6k_scorer.npz",
    "uniform labels, 12k games": "runs/post/uniform_scorer.npz",
    "uniform labels, 24k games": "runs/post36/uniform_g24k_scorer.npz",
    "uniform labels, 48k games": "runs/post/uniform_48k_scorer.npz",
    "48k games, 384 x 384": "runs/post/uniform_48k384_scorer.npz",
    "the shipped scorer": str(DEFAULT_SCORER),
    "make train, doubled labels, 256 x 256 (final)": "runs/mt2/final.npz",
}

if __name__ == "__main__":
    d = deals(10000, FRESH)
    scorers = {name: load_scorer(path) for name, path in MODELS.items()}
    for name, s in scorers.items():
        score, half = duplicate_score(pack(s), d)
        print(f"{name}: {score:.4f} +- {half:.4f}")
    four = [scorers[k] for k in ("uniform labels, 48k games", "48k games, 384 x 384", "uniform labels, 12k games",
                                 "the shipped scorer")]  # fmt: skip
    score, half = duplicate_score(pack(ensemble(four)), d)
    print(f"the ensemble of four: {score:.4f} +- {half:.4f}")
