"""The reports of a tournament: the terminal table, summary.json / .csv, ratings.csv, summary.png,
and report.html with the replays of every game (:func:`write_html_report`)."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from conquian_env.rules import Rules

from .runfiles import write_bytes


def format_summary(summary: dict[str, Any]) -> str:
    """The terminal report."""
    cfg = summary["config"]
    pct = round(100 * summary["confidence"])
    kind = f"gauntlet of {cfg['labels'][0]}" if cfg["gauntlet"] is not None else "round robin"
    deals = "duplicate deals (seats swapped)" if cfg["duplicate"] else "one deal per game"
    lines = [
        f"Conquian tournament: {len(cfg['labels'])} bots, {kind}, {cfg['games']} games per pair, {deals}, "
        f"seed {cfg['seed']}, rules {cfg['rules']}",
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
    write_bytes(out_dir / "summary.json", json.dumps(_json_safe(summary), indent=2) + "\n")
    pair_fields = [
        "a", "b", "games", "units", "wins", "draws", "losses", "score", "score_low", "score_high", "draw_rate",
        "decided_win_rate", "stake_mean", "stake_low", "stake_high", "stake_total", "stake_max", "moves_mean",
        "moves_sd", "seat0_score", "crash_a", "illegal_a", "crash_b", "illegal_b",
    ]  # fmt: skip
    f = io.StringIO(newline="")
    writer = csv.DictWriter(f, fieldnames=pair_fields, extrasaction="ignore")
    writer.writeheader()
    for p in summary["pairs"]:
        fails = {f"{kind}_{side}": p["failures"][p[side]][kind] for side in "ab" for kind in ("crash", "illegal")}
        writer.writerow({**p, **fails})
    write_bytes(out_dir / "summary.csv", f.getvalue())
    bot_fields = ["bot", "spec", "elo", "elo_low", "elo_high", "games", "score", "wins", "draws", "losses",
                  "crash", "illegal"]  # fmt: skip
    f = io.StringIO(newline="")
    writer = csv.DictWriter(f, fieldnames=bot_fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(summary["ratings"])
    write_bytes(out_dir / "ratings.csv", f.getvalue())


def _json_safe(obj: Any) -> Any:
    """NaN is not JSON: write null instead (and the rules as their fields)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Rules):
        return obj.to_dict()
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
    # an unbounded side (a bot that won every one of a handful of deals) is drawn 1000 Elo long
    below, above = (np.clip(np.nan_to_num(d, nan=0.0, posinf=1000.0), 0, 1000) for d in (elo - low, high - elo))
    ax2.errorbar(elo, y, xerr=[below, above], fmt="o", capsize=4)
    ax2.set_yticks(y, [_cut(r["bot"], 22) for r in ratings])
    ax2.axvline(0, color="grey", lw=0.8, ls=":")
    ax2.set_xlabel(f"Elo (Bradley-Terry), {pct}% CI")
    ax2.set_title("ratings")
    ax2.set_ylim(-0.6, len(ratings) - 0.4)
    cfg = summary["config"]
    fig.suptitle(
        f"Conquian: {cfg['games']} games per pair, {'duplicate deals' if cfg['duplicate'] else 'single deals'}, "
        f"rules {cfg['rules']}, seed {cfg['seed']}",
        fontsize=11,
    )
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    write_bytes(path, buffer.getvalue())
    plt.close(fig)


# --------------------------------------------------------------------------- report.html
#: games per replay file: a pair with more is split into parts (each game is about 15 KB)
REPLAY_GAMES_PER_FILE = 250


def write_html_report(summary: dict[str, Any], out_dir: Path, games_per_file: int = REPLAY_GAMES_PER_FILE) -> Path:
    """Write ``report.html`` (the summary table, the ratings, ``summary.png`` embedded as a
    data URI when it exists, and a link to every game's replay) and the replays it links
    to: ``replays/pairK-A-vs-B.html``, one self-contained replay page per pair of bots
    (split into parts of ``games_per_file`` games), each game at ``#game=INDEX``.
    Returns the path of the report."""
    from .pages import game_data, game_label, replay_page_of
    from .record import ReplayError, load_records

    out_dir = Path(out_dir)
    games, _ = load_records(out_dir / "games.jsonl") if (out_dir / "games.jsonl").exists() else ([], [])
    by_pair: dict[tuple[str, str], list[Any]] = {}
    for g in games:
        pair = g.data.get("pair")
        key = (str(pair[0]), str(pair[1])) if isinstance(pair, list) and len(pair) == 2 else tuple(g.players)
        by_pair.setdefault(key, []).append(g)
    replays = out_dir / "replays"
    replays.mkdir(exist_ok=True)
    for old in replays.glob("pair*.html"):  # an earlier run's files (a resume may split the pairs otherwise)
        old.unlink()
    links: dict[int, str] = {}
    files: dict[tuple[str, str], list[str]] = {}
    unreplayable: list[str] = []
    for k, (pair, pair_games) in enumerate(by_pair.items(), 1):
        stem = f"pair{k}-{_slug(pair[0])}-vs-{_slug(pair[1])}"
        parts = [pair_games[i : i + games_per_file] for i in range(0, len(pair_games), games_per_file)]
        for n, part in enumerate(parts, 1):
            name = f"{stem}.html" if len(parts) == 1 else f"{stem}-part{n}.html"
            entries = []
            for g in part:
                try:
                    entries.append((game_label(g), game_data(g)))
                except ReplayError as err:
                    unreplayable.append(str(err))
                    continue
                links[g.index] = f"replays/{name}#game={g.index}"
            if entries:
                title = f"Conquian: {pair[0]} vs {pair[1]}" + (f" (part {n} of {len(parts)})" if len(parts) > 1 else "")
                write_bytes(replays / name, replay_page_of(entries, title))
                files.setdefault(pair, []).append(f"replays/{name}")
    path = out_dir / "report.html"
    write_bytes(path, _report_html(summary, out_dir, by_pair, links, files, unreplayable))
    return path


def _slug(label: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9=.]+", "_", label).strip("_")[:40] or "bot"


def _report_html(
    summary: dict[str, Any],
    out_dir: Path,
    by_pair: dict[tuple[str, str], list[Any]],
    links: dict[int, str],
    files: dict[tuple[str, str], list[str]],
    unreplayable: list[str],
) -> str:
    import base64
    import html

    from .pages import asset, game_label

    e = html.escape
    cfg = summary["config"]
    pct = round(100 * summary["confidence"])
    head = format_summary(summary).splitlines()[0]
    rows = []
    for p in summary["pairs"]:
        fa = sum(p["failures"][p["a"]].values())
        fb = sum(p["failures"][p["b"]].values())
        replay_links = " ".join(
            f'<a href="{e(f)}">{"replays" if len(files.get((p["a"], p["b"]), [])) == 1 else f"part {i}"}</a>'
            for i, f in enumerate(files.get((p["a"], p["b"]), []), 1)
        )
        rows.append(
            f'<tr><td class="name">{e(p["a"])}</td><td class="name">{e(p["b"])}</td><td>{p["games"]}</td>'
            f"<td>{p['wins']}</td><td>{p['draws']}</td><td>{p['losses']}</td><td>{_pct(p['decided_win_rate'])}</td>"
            f"<td>{p['score']:.3f} [{p['score_low']:.3f}, {p['score_high']:.3f}]</td>"
            f"<td>{_num(p['stake_mean'])} [{_num(p['stake_low'])}, {_num(p['stake_high'])}]</td>"
            f'<td>{p["moves_mean"]:.1f}</td><td>{fa}/{fb}</td><td class="name">{replay_links}</td></tr>'
        )
    ratings = []
    for r in sorted(summary["ratings"], key=lambda r: -r["elo"]):
        timing = summary["timing"].get(r["bot"], {})
        ms = timing.get("ms_per_decision", float("nan"))
        ratings.append(
            f'<tr><td class="name">{e(r["bot"])}</td><td class="name"><code>{e(str(r.get("spec", "")))}</code></td>'
            f"<td>{r['elo']:+.0f}</td><td>[{r['elo_low']:+.0f}, {r['elo_high']:+.0f}]</td><td>{r['games']}</td>"
            f"<td>{r['score']:.3f}</td><td>{r['wins']}</td><td>{r['draws']}</td><td>{r['losses']}</td>"
            f"<td>{r['crash']}</td><td>{r['illegal']}</td><td>{ms:.2f}</td></tr>"
        )
    plot = ""
    png = out_dir / "summary.png"
    if png.exists():
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        plot = f'<h2>Plot</h2><img class="plot" alt="score matrix and ratings" src="data:image/png;base64,{data}">'
    fp = summary["first_player"]
    methods = summary["methods"]
    method_items = "".join(
        f"<li><b>{e(k)}</b>: {e(str(v))}</li>" for k, v in methods.items() if isinstance(v, (str, int, float))
    )
    game_sections = []
    for (a, b), pair_games in by_pair.items():
        cells = []
        for g in pair_games:
            winner_label = g.data.get("winner_label")
            if winner_label is None and g.data.get("winner") in (0, 1):
                winner_label = g.players[g.data["winner"]]
            kind = "draw" if winner_label is None else "win" if winner_label == a else "loss"
            failed = " failed" if g.data.get("failure") else ""
            title = e(game_label(g), quote=True)
            href = links.get(g.index)
            text = str(g.index)
            cells.append(
                f'<a class="{kind}{failed}" href="{e(href)}" title="{title}">{text}</a>'
                if href
                else f'<span class="{kind}" title="{title}">{text}?</span>'
            )
        is_open = " open" if len(pair_games) <= 200 else ""  # a long list stays folded
        game_sections.append(
            f"<details{is_open}><summary><b>{e(a)}</b> vs <b>{e(b)}</b>: {len(pair_games)} games</summary>"
            f'<div class="games">{"".join(cells)}</div></details>'
        )
    problems = "".join(f"<li>{e(p)}</li>" for p in unreplayable)
    kind = f"gauntlet of {cfg['labels'][0]}" if cfg["gauntlet"] is not None else "round robin"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>Conquian tournament: {e(', '.join(cfg['labels']))}</title>",
            '<link rel="icon" href="data:,">',
            f"<style>\n{asset('report.css')}\n</style></head><body>",
            f"<h1>Conquian tournament: {e(', '.join(cfg['labels']))}</h1>",
            f'<p class="muted">{e(head)}</p>',
            f"<h2>Pairs ({kind})</h2>",
            "<table><tr>"
            '<th class="name">A</th><th class="name">B</th><th>games</th><th>W</th><th>D</th><th>L</th>'
            f"<th>W/(W+L)</th><th>score A [{pct}% CI]</th><th>stake/game A [{pct}% CI]</th><th>moves</th>"
            '<th>fail A/B</th><th class="name">replays</th></tr>',
            *rows,
            "</table>",
            f"<p>first player (seat 0) score {fp['score']:.3f} [{fp['low']:.3f}, {fp['high']:.3f}]; "
            f"draws {100 * summary['draw_rate']:.1f}%; mean game length {summary['moves_mean']:.1f} decisions</p>",
            "<h2>Ratings</h2>",
            '<table><tr><th class="name">bot</th><th class="name">spec</th><th>Elo</th>'
            f"<th>[{pct}% CI]</th><th>games</th><th>score</th><th>W</th><th>D</th><th>L</th>"
            "<th>crash</th><th>illegal</th><th>ms/move</th></tr>",
            *ratings,
            "</table>",
            plot,
            "<h2>Games</h2>",
            '<p class="legend">Each number is a game: click it for its replay (step with the arrow keys). '
            'Colours are for bot A of the pair: <span class="games"><a class="win">win</a> <a class="draw">draw</a> '
            '<a class="loss">loss</a> <a class="failed">crash, illegal or quit</a></span></p>',
            *game_sections,
            f"<h2>Problems</h2><ul>{problems}</ul>" if problems else "",
            f"<h2>Methods</h2><ul>{method_items}</ul>",
            '<p class="muted">Files: <a href="games.jsonl">games.jsonl</a> <a href="summary.json">summary.json</a> '
            '<a href="summary.csv">summary.csv</a> <a href="ratings.csv">ratings.csv</a>'
            + (' <a href="summary.png">summary.png</a>' if plot else "")
            + "</p>",
            "</body></html>",
        ]
    )
