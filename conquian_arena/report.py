"""The reports of a tournament: the terminal table, summary.json / .csv, ratings.csv and summary.png."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np


def format_summary(summary: dict[str, Any]) -> str:
    """The terminal report."""
    cfg = summary["config"]
    pct = round(100 * summary["confidence"])
    kind = f"gauntlet of {cfg['labels'][0]}" if cfg["gauntlet"] is not None else "round robin"
    deals = "duplicate deals (seats swapped)" if cfg["duplicate"] else "one deal per game"
    lines = [
        f"Conquian tournament: {len(cfg['labels'])} bots, {kind}, {cfg['games']} games per pair, {deals}, "
        f"seed {cfg['seed']}, forcing {'on' if cfg['forcing'] else 'off'}",
        "",
        f"{'A':<24} {'B':<24} {'W':>5} {'D':>5} {'L':>5} {'W/(W+L)':>7}  {'score A':>7} {f'[{pct}% CI]':<15} "
        f"{'stake/game A':>12} {f'[{pct}% CI]':<19} {'moves':>6}  fail A/B",
    ]
    for p in summary["pairs"]:
        fa = sum(p["failures"][p["a"]].values())
        fb = sum(p["failures"][p["b"]].values())
        stake_ci = f"[{_num(p['stake_low'])}, {_num(p['stake_high'])}]"
        lines.append(
            f"{_cut(p['a'], 24):<24} {_cut(p['b'], 24):<24} {p['wins']:>5} {p['draws']:>5} {p['losses']:>5} "
            f"{_pct(p['decided_win_rate']):>7}  "
            f"{p['score']:>7.3f} [{p['score_low']:.3f}, {p['score_high']:.3f}] "
            f"{_num(p['stake_mean']):>12} {stake_ci:<19} "
            f"{p['moves_mean']:>6.1f}  {fa}/{fb}"
        )
    lines += [
        "",
        f"{'bot':<30} {'Elo':>7} {f'[{pct}% CI]':<18} {'games':>6} {'score':>6} {'crash':>6} "
        f"{'illegal':>7} {'ms/move':>8} {'max ms':>8}",
    ]
    for r in sorted(summary["ratings"], key=lambda r: -r["elo"]):
        timing = summary["timing"][r["bot"]]
        ms, max_ms = timing["ms_per_decision"], 1000 * timing["max_seconds"]
        lines.append(
            f"{_cut(r['bot'], 30):<30} {r['elo']:>+7.0f} [{r['elo_low']:+.0f}, {r['elo_high']:+.0f}]".ljust(57)
            + f" {r['games']:>6} {r['score']:>6.3f} {r['crash']:>6} {r['illegal']:>7} {ms:>8.2f} {max_ms:>8.1f}"
        )
    fp = summary["first_player"]
    methods = summary["methods"]
    lines += [
        "",
        f"first player (seat 0) score {fp['score']:.3f} [{fp['low']:.3f}, {fp['high']:.3f}]; "
        f"draws {100 * summary['draw_rate']:.1f}%; mean game length {summary['moves_mean']:.1f} decisions",
        "",
        "methods:",
        f"  score:   {methods['score']}",
        f"  stake:   {methods['stake']}",
        *(f"           {p['a']} vs {p['b']}: {p['stake_note']}" for p in summary["pairs"] if p.get("stake_note")),
        f"  ratings: {methods['ratings']}",
        f"           interval: {methods['rating_interval']}",
    ]
    return "\n".join(lines)


def _pct(x: float) -> str:
    return "-" if x != x else f"{100 * x:.1f}%"  # NaN when no game was decided


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 2] + ".."


def _num(x: float) -> str:
    """Signed, 3 decimals; scientific once doubling stakes make it huge; n/a when not given."""
    if math.isnan(x):
        return "n/a"
    return f"{x:+.3f}" if not math.isfinite(x) or abs(x) < 1e4 else f"{x:+.2e}"


def write_summary(summary: dict[str, Any], out_dir: Path) -> None:
    (out_dir / "summary.json").write_text(json.dumps(_json_safe(summary), indent=2) + "\n")
    pair_fields = [
        "a", "b", "games", "units", "wins", "draws", "losses", "score", "score_low", "score_high", "draw_rate",
        "decided_win_rate", "stake_mean", "stake_low", "stake_high", "stake_total", "stake_max", "moves_mean",
        "moves_sd", "seat0_score", "crash_a", "illegal_a", "crash_b", "illegal_b",
    ]  # fmt: skip
    with open(out_dir / "summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=pair_fields, extrasaction="ignore")
        writer.writeheader()
        for p in summary["pairs"]:
            fails = {f"{kind}_{side}": p["failures"][p[side]][kind] for side in "ab" for kind in ("crash", "illegal")}
            writer.writerow({**p, **fails})
    bot_fields = ["bot", "spec", "elo", "elo_low", "elo_high", "games", "score", "wins", "draws", "losses",
                  "crash", "illegal"]  # fmt: skip
    with open(out_dir / "ratings.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=bot_fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(summary["ratings"])


def _json_safe(obj: Any) -> Any:
    """NaN is not JSON: write null instead."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def plot_summary(summary: dict[str, Any], path: Path) -> None:
    """summary.png: score matrix (row bot's score against column bot) and Elo with intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = summary["config"]["labels"]
    k = len(labels)
    index = {label: i for i, label in enumerate(labels)}
    matrix = np.full((k, k), np.nan)
    record = {}  # (row, column) -> "W-D-L" of the row bot
    for p in summary["pairs"]:
        ia, ib = index[p["a"]], index[p["b"]]
        matrix[ia, ib], matrix[ib, ia] = p["score"], 1 - p["score"]
        record[ia, ib] = f"{p['wins']}-{p['draws']}-{p['losses']}"
        record[ib, ia] = f"{p['losses']}-{p['draws']}-{p['wins']}"
    ratings = sorted(summary["ratings"], key=lambda r: r["elo"])
    pct = round(100 * summary["confidence"])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7 + 1.1 * k, 2.6 + 0.75 * k), gridspec_kw={"width_ratios": [1, 1]})
    cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="0.85")  # grey: not played
    image = ax1.imshow(np.ma.masked_invalid(matrix), cmap=cmap, vmin=0, vmax=1)
    for (i, j), wdl in record.items():
        color = "white" if abs(matrix[i, j] - 0.5) > 0.3 else "black"
        ax1.text(j, i, f"{matrix[i, j]:.2f}\n{wdl}", ha="center", va="center", fontsize=9, color=color)
    short = [_cut(label, 22) for label in labels]
    ax1.set_xticks(range(k), short, rotation=30, ha="right")
    ax1.set_yticks(range(k), short)
    ax1.set_xlabel("opponent")
    ax1.set_title("score of row bot (win 1, draw 1/2)\nand its wins-draws-losses", fontsize=10)
    fig.colorbar(image, ax=ax1, fraction=0.046, pad=0.04)
    y = np.arange(len(ratings))
    elo = np.array([r["elo"] for r in ratings])
    low = np.array([r["elo_low"] for r in ratings])
    high = np.array([r["elo_high"] for r in ratings])
    ax2.errorbar(elo, y, xerr=[np.maximum(elo - low, 0), np.maximum(high - elo, 0)], fmt="o", capsize=4)
    ax2.set_yticks(y, [_cut(r["bot"], 22) for r in ratings])
    ax2.axvline(0, color="grey", lw=0.8, ls=":")
    ax2.set_xlabel(f"Elo (Bradley-Terry), {pct}% bootstrap CI")
    ax2.set_title("ratings")
    ax2.set_ylim(-0.6, len(ratings) - 0.4)
    cfg = summary["config"]
    fig.suptitle(
        f"Conquian: {cfg['games']} games per pair, {'duplicate deals' if cfg['duplicate'] else 'single deals'}, "
        f"forcing {'on' if cfg['forcing'] else 'off'}, seed {cfg['seed']}",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
