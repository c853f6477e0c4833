"""Draws ``curves.csv`` (this folder: the scores the other scripts printed) as
``docs/images/dmcA_curves.png``: the student's score against greedy by labelled decisions, and
the Deep Monte-Carlo runs' by self-play decisions (each point the 20,000-game check, its 95%
interval as a bar).

    python docs/experiments/dmcA/curves.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[1] / "images" / "dmcA_curves.png"


def main() -> None:
    rows = list(csv.DictReader((HERE / "curves.csv").open()))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    panels = ((axes[0], "labelled", "distillation: labelled decisions (uniform labels, K playouts)"),
              (axes[1], "selfplay", "Deep Monte-Carlo from the shipped scorer: self-play decisions"))  # fmt: skip
    for ax, axis, title in panels:
        for series in sorted({r["series"] for r in rows if r["axis"] == axis}):
            pts = sorted((float(r["x"]), float(r["score"]), float(r["half"])) for r in rows
                         if r["axis"] == axis and r["series"] == series)  # fmt: skip
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], marker="o", capsize=3,
                        label=series)  # fmt: skip
        ax.axhline(0.5, color="grey", lw=0.8, ls=":")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("decisions")
        ax.legend(fontsize=8)
    axes[0].set_xscale("log")
    axes[0].set_ylabel("score against greedy (20,000 games)")
    fig.tight_layout()
    fig.savefig(OUT, dpi=110)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
