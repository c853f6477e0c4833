"""Baselines a researcher puts beside a new algorithm: MaskablePPO from scratch, three seeds each.

    python examples/baselines.py                        # raw and meld, seeds 0 1 2, 3M steps each
    python examples/baselines.py --steps 200000 --seeds 0 --variants raw --out results/baselines_quick

Two variants of the PPO recipe (``conquian-train ppo``, :mod:`conquian_train.recipes.ppo`) with no warm start
(``bc_games`` 0), its default opponent pool (greedy, random, the learner's snapshots) and evaluation
(duplicate deals of ``conquian-evaluate --seed 1000003``, against random and greedy):

- ``raw``: the raw observation only (no meld features, so no greedy input either);
- ``meld``: the observation with the meld-aware features (greedy's choice among them).

Each run is a ``ppo`` run folder under ``--out`` (``VARIANT_sSEED``); a rerun resumes
unfinished runs and skips finished ones.  At the end the evaluations of every run are
gathered into ``--csv`` (one row per run, step and opponent, with the run's wall time and
the steps it has reached) and drawn into ``--png`` (mean over seeds, each seed thin);
``--gather-only`` does just that with the runs as they stand (unfinished ones too).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from conquian_env.extras import one_line

with one_line("examples/baselines.py"):  # the ppo recipe: SB3, torch and numba
    from conquian_train.recipes import ppo

VARIANTS = {"raw": {"features": "raw"}, "meld": {"features": "meld"}}


def run_one(variant: str, seed: int, steps: int, out: Path, eval_every: int, eval_games: int,
            extra: list[str]) -> Path:  # fmt: skip
    """One baseline run (resumed if it was stopped; skipped if it is finished); its folder."""
    folder = out / f"{variant}_s{seed}"
    if (folder / "final.zip").exists():
        state = json.loads((folder / "checkpoints" / "state.json").read_text())
        if state["num_timesteps"] >= steps:
            return folder
    if (folder / "checkpoints" / "latest.zip").exists():
        args = ["--resume", str(folder), "--total-steps", str(steps), "--no-progress"]
    else:
        args = ["--out", str(folder), "--seed", str(seed), "--total-steps", str(steps), "--bc-games", "0",
                "--eval-every", str(eval_every), "--eval-games", str(eval_games), "--checkpoint-every",
                str(eval_every), "--no-progress"]  # fmt: skip
        for key, value in VARIANTS[variant].items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        args += extra
    if ppo.main(args) != 0:
        raise SystemExit(f"baseline {folder} failed")
    return folder


def gather(folders: list[Path], csv_path: Path) -> list[dict]:
    """Every evaluation of every run (the score, and wins, draws, losses and the share of the decided
    games won: against random most games are draws), with the variant, seed and the run's wall time."""
    rows = []
    for folder in folders:
        variant, seed = folder.name.rsplit("_s", 1)
        state = json.loads((folder / "checkpoints" / "state.json").read_text())
        seconds = state["seconds"]
        for r in csv.DictReader(open(folder / "eval.csv")):
            rows.append({"variant": variant, "seed": int(seed), "step": int(r["step"]), "opponent": r["opponent"],
                         "score": float(r["score"]), "low": float(r["low"]), "high": float(r["high"]),
                         "games": int(r["games"]), "wins": int(r["wins"]), "draws": int(r["draws"]),
                         "losses": int(r["losses"]), "decided_won": float(r["decided_won"]),
                         "run_wall_s": round(seconds), "run_steps": int(state["num_timesteps"])})  # fmt: skip
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return rows


def plot(rows: list[dict], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    opponents = list(dict.fromkeys(r["opponent"] for r in rows))
    fig, axes = plt.subplots(1, len(opponents), figsize=(5 * len(opponents), 3.8), squeeze=False)
    for ax, opp in zip(axes[0], opponents, strict=True):
        for i, variant in enumerate(dict.fromkeys(r["variant"] for r in rows)):
            sub = [r for r in rows if r["opponent"] == opp and r["variant"] == variant]
            seeds = sorted({r["seed"] for r in sub})
            for s in seeds:
                pts = sorted((r["step"], r["score"]) for r in sub if r["seed"] == s)
                ax.plot(*zip(*pts, strict=True), color=f"C{i}", lw=0.7, alpha=0.4)
            steps = sorted({r["step"] for r in sub})
            mean = [np.mean([r["score"] for r in sub if r["step"] == t]) for t in steps]
            ax.plot(steps, mean, color=f"C{i}", lw=2, marker="o", ms=3, label=f"{variant} ({len(seeds)} seeds)")
        ax.axhline(0.5, color="grey", lw=0.8, ls="--")
        ax.set(title=f"against {opp}", xlabel="learner steps", ylabel="score (duplicate deals)", ylim=(0, 1))
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=3_000_000)
    parser.add_argument("--eval-every", type=int, default=250_000)
    parser.add_argument("--eval-games", type=int, default=600)
    parser.add_argument("--out", default="results/baselines", help="the run folders")
    parser.add_argument("--csv", default="docs/experiments/baselines/curves.csv")
    parser.add_argument("--png", default="docs/images/baselines.png")
    parser.add_argument("--train-args", default="",
                        help="more conquian-train ppo options for new runs, e.g. '--n-envs 64'")  # fmt: skip
    parser.add_argument("--gather-only", action="store_true",
                        help="train nothing: gather what the run folders hold (unfinished runs too)")  # fmt: skip
    args = parser.parse_args(argv)
    extra = args.train_args.split()
    if args.gather_only:
        folders = [f for v in args.variants for s in args.seeds
                   if ((f := Path(args.out) / f"{v}_s{s}") / "checkpoints" / "state.json").exists()]  # fmt: skip
        if not folders:
            print(f"error: no run folder with a checkpoint under {args.out}", file=sys.stderr)
            return 2
    else:
        folders = [run_one(v, s, args.steps, Path(args.out), args.eval_every, args.eval_games, extra)
                   for v in args.variants for s in args.seeds]  # fmt: skip
    rows = gather(folders, Path(args.csv))
    plot(rows, Path(args.png))
    print(f"{len(rows)} evaluations of {len(folders)} runs -> {args.csv}, {args.png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    with one_line("examples/baselines.py"):
        sys.exit(main())
