"""Regret of action scorers on an expert-iteration run's held-out games, by that run's labels.

    python examples/held_out_regret.py runs/exit4 runs/exit4/round0.npz runs/exit5/round0.npz

The held-out games are the ones ``conquian-train exit``'s fit holds out (game id divisible by 5);
the regret of a scorer is the search's value of the best legal action minus the value of the
scorer's choice, averaged over the searched positions with a choice (greedy's is printed
first).  So two scorers fitted on different labels (e.g. of another search budget) are
compared by the same values, on games neither was fitted on.  ``--rounds`` picks the label
rounds (default: round 0 only).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from agents.scorer import load_scorer
from conquian_train.imitation import ImitationData
from conquian_train.scorer_fit import ScorerSettings, regret, scorer_positions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a conquian-train exit run folder (its labels/)")
    parser.add_argument("models", nargs="+", help="scorer files (.npz) to measure")
    parser.add_argument("--rounds", nargs="+", type=int, default=[0], help="label rounds to read")
    args = parser.parse_args(argv)
    shards = [p for r in args.rounds for p in sorted(Path(args.run, "labels").glob(f"r{r:02d}_*.npz"))]
    if not shards:
        print(f"error: no label shards of rounds {args.rounds} in {args.run}/labels", file=sys.stderr)
        return 2
    pos = scorer_positions(ImitationData.concatenate([ImitationData.load(p, "meld")[0] for p in shards]))
    held = pos["game"] % ScorerSettings().holdout == 0
    x, valid, q = pos["x"][held], pos["valid"][held], pos["q"][held]
    greedy = np.eye(x.shape[1], dtype=np.float32)[pos["greedy"][held]]
    print(f"{args.run} rounds {args.rounds}: {len(shards)} shards, {int(held.sum())} held-out positions")
    print(f"  greedy: regret {regret(greedy, valid, q):.5f}")
    for path in args.models:
        scorer = load_scorer(path)
        scores = np.concatenate([scorer(x[i : i + 8192]) for i in range(0, len(x), 8192)] or [np.zeros((0, 12))])
        print(f"  {path}: regret {regret(scores, valid, q):.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
