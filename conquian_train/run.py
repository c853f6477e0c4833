"""The run folder: ``train.log``, CSV files, checkpoints and the run state (``checkpoints/state.json``)."""

from __future__ import annotations

import csv
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from agents.ppo import NumpyPolicy, load_snapshots, restore_checkpoint, save_snapshots


class RunFolder:
    """One run's folder and the state that ``--resume`` reads back."""

    def __init__(self, out: str | Path):
        self.out = Path(out)
        self.state: dict[str, Any] = {
            "best_score": -1.0, "best_step": None, "next_eval": 0, "next_snapshot": 0, "next_checkpoint": 0,
            "snapshot_steps": [], "seconds": 0.0,
        }  # fmt: skip
        self.snapshots: list[NumpyPolicy] = []  # the pool's snapshots, newest last (also in the games' pools)
        self.t_start = time.time()

    def log(self, text: str) -> None:
        """A time-stamped line on standard error and in ``train.log``."""
        line = f"[{time.strftime('%H:%M:%S')}] {text}"
        print(line, file=sys.stderr, flush=True)
        with open(self.out / "train.log", "a") as f:
            f.write(line + "\n")

    def elapsed(self) -> float:
        """Seconds of training so far, over every session of a resumed run."""
        return self.state["seconds"] + time.time() - self.t_start

    def append_csv(self, name: str, rows: list[dict[str, Any]]) -> None:
        """Append ``rows`` to the CSV file ``name`` (its header from the first row when new)."""
        if not rows:
            return
        path = self.out / name
        new = not path.exists()
        with open(path, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            if new:
                w.writeheader()
            w.writerows(rows)

    def resume(self, model, features: str) -> None:
        """Put the checkpoint's weights, counters, snapshots and run state into the fresh ``model``."""
        latest = self.out / "checkpoints" / "latest.zip"
        if not latest.exists():
            raise ValueError(f"--resume {self.out}: no checkpoint at {latest}")
        self.state.update(json.loads((self.out / "checkpoints" / "state.json").read_text()))
        restore_checkpoint(model, latest, features)  # weights only: no code from the file runs
        self.snapshots = load_snapshots(self.out / "checkpoints" / "snapshots.npz", features)
        for snapshot in self.snapshots:
            model.get_env().env_method("add_snapshot", snapshot)

    def save_model(self, model, suffix: str = ".zip") -> Path:
        """``checkpoints/latest{suffix}``: ``model.save`` into a temporary file, then a rename."""
        ck = self.out / "checkpoints"
        ck.mkdir(exist_ok=True)
        model.save(ck / f"latest.tmp{suffix}")
        os.replace(ck / f"latest.tmp{suffix}", ck / f"latest{suffix}")
        return ck / f"latest{suffix}"

    def save_checkpoint(self, model) -> None:
        """The model, the snapshot pool and the run state, each written atomically."""
        self.save_model(model)
        save_snapshots(self.out / "checkpoints" / "snapshots.npz", self.snapshots)
        self.write_state(model.num_timesteps)

    def write_state(self, num_timesteps: int) -> None:
        """``checkpoints/state.json``: counters, best score, elapsed time, step count (atomic)."""
        path = self.out / "checkpoints" / "state.json"
        path.parent.mkdir(exist_ok=True)
        path.with_suffix(".tmp.json").write_text(
            json.dumps({**self.state, "seconds": self.elapsed(), "num_timesteps": num_timesteps}, indent=2)
        )
        os.replace(path.with_suffix(".tmp.json"), path)


def plot_learning_curve(eval_csv: Path, png: Path, xlabel: str = "learner steps", x: str = "step",
                        regret_csv: Path | None = None) -> None:  # fmt: skip
    """Score with its interval against each evaluation opponent, by ``x`` (a column of ``eval_csv``);
    with ``regret_csv`` (columns ``labels``, ``held_out_regret``, ``greedy_held_out_regret``: expert
    iteration's fits) a second panel: the network's regret on held-out games, and greedy's."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    with open(eval_csv) as f:
        rows = list(csv.DictReader(f))
    regret = list(csv.DictReader(open(regret_csv))) if regret_csv is not None and regret_csv.exists() else []
    fig, axes = plt.subplots(1, 2 if regret else 1, figsize=(12 if regret else 7, 4), squeeze=False)
    ax = axes[0, 0]
    for spec in dict.fromkeys(r["opponent"] for r in rows):
        sub = [r for r in rows if r["opponent"] == spec]
        xs = [int(r[x]) for r in sub]
        ax.plot(xs, [float(r["score"]) for r in sub], marker="o", label=f"vs {spec}")
        ax.fill_between(xs, [float(r["low"]) for r in sub], [float(r["high"]) for r in sub], alpha=0.2)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set(xlabel=xlabel, ylabel="score (win 1, draw 1/2), 95% interval", ylim=(0, 1))
    ax.legend()
    ax.grid(alpha=0.3)
    if regret:
        ax = axes[0, 1]
        xs = [int(r["labels"]) for r in regret]
        ax.plot(xs, [float(r["held_out_regret"]) for r in regret], marker="o", label="the network")
        ax.plot(xs, [float(r["greedy_held_out_regret"]) for r in regret], marker="s", ls="--", label="greedy")
        ax.set(xlabel=xlabel, ylabel="regret on held-out games (search values)", ylim=(0, None),
               title="lower is better: value lost per decision")  # fmt: skip
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
