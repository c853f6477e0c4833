"""Strength of the action scorer against the labelled decisions it learned from.

    python examples/scorer_curve.py runs/exit --shards 12 25 50 100 200 --games 2000 --seed 5150

Fits a fresh scorer (``conquian-train exit``'s fit, :func:`conquian_train.scorer_fit.fit_scorer`, the
run's knobs) on the first ``N`` label shards of round 0 of the expert-iteration run, for each
``N`` of ``--shards``, and plays each against greedy on the duplicate deals of
``conquian-evaluate --seed SEED``.  One row per fit goes to ``--csv`` (labelled decisions,
searched positions, held-out regret of the scorer and of greedy, score with its interval) and
the curve to ``--png``.  So a reader sees whether more data would help.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

from conquian_env.extras import one_line

with one_line("examples/scorer_curve.py"):  # numba, and torch for the fit
    from agents.scorer.scorer import ScorerAgent
    from conquian_arena import knobs
    from conquian_train.evaluation import evaluate_agent
    from conquian_train.imitation import ImitationData
    from conquian_train.recipes.exit import ExItConfig
    from conquian_train.scorer_fit import fit_scorer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a conquian-train exit run folder (its config.json and labels/)")
    parser.add_argument("--shards", nargs="+", type=int, default=[12, 25, 50, 100, 200])
    parser.add_argument("--games", type=int, default=2000, help="games against greedy per point")
    parser.add_argument("--seed", type=int, default=5150, help="deal seed of the games (not the run's eval seed)")
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("--csv", default="docs/experiments/scorer_curve/curve.csv")
    parser.add_argument("--png", default="docs/images/scorer_curve.png")
    args = parser.parse_args(argv)
    run = Path(args.run)
    config = knobs.from_dict(ExItConfig, {**knobs.read_config(run / "config.json"), "out": str(run)})
    shards = sorted((run / "labels").glob("r00_*.npz"))
    if max(args.shards) > len(shards):
        print(f"error: {run} has {len(shards)} round-0 shards, --shards asks for {max(args.shards)}", file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(config.torch_threads)
    rows = []
    for n in args.shards:
        t0 = time.perf_counter()
        data = ImitationData.concatenate([ImitationData.load(p, config.features)[0] for p in shards[:n]])
        scorer, report = fit_scorer(data, config.scorer_settings(), config.seed)
        fit_s = time.perf_counter() - t0
        r = evaluate_agent(ScorerAgent.from_scorer(scorer), "greedy", args.games, args.seed, jobs=args.jobs)
        rows.append({"shards": n, "games_labelled": n * config.chunk, "labelled_decisions": len(data),
                     "searched_positions": report[0]["positions"] + report[0]["held_out"],
                     "held_out_regret": scorer.meta["held_out_regret"],
                     "greedy_held_out_regret": scorer.meta["greedy_held_out_regret"], "games": args.games,
                     "seed": args.seed, "wins": r["wins"], "draws": r["draws"], "losses": r["losses"],
                     "decided_won": round(r["decided_won"], 4), "score": round(r["score"], 4),
                     "low": round(r["low"], 4), "high": round(r["high"], 4), "fit_s": round(fit_s, 1)})  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return 0
    x = [r["labelled_decisions"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.errorbar(x, [r["score"] for r in rows], yerr=[[r["score"] - r["low"] for r in rows],
                [r["high"] - r["score"] for r in rows]], marker="o", capsize=3, label="scorer vs greedy")  # fmt: skip
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_xlabel("labelled decisions (round 0 of conquian-train exit)")
    ax.set_ylabel(f"score vs greedy ({args.games} games, 95% CI)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    Path(args.png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.csv} and {args.png}")
    return 0


if __name__ == "__main__":
    with one_line("examples/scorer_curve.py"):
        raise SystemExit(main())
