"""Regret of action scorers on an expert-iteration run's held-out games, by that run's labels or by
precise values searched again: where the student loses against its teacher.

    python examples/held_out_regret.py runs/exit4 runs/exit4/round0.npz runs/exit5/round0.npz
    python examples/held_out_regret.py runs/exit4 runs/exit4/round0.npz --precise 2000 --shards 8

The held-out games are the ones ``conquian-train exit``'s fit holds out (game id divisible by 5);
the regret of a scorer is the search's value of the best legal action minus the value of the
scorer's choice, averaged over the searched positions with a choice (greedy's is printed
first).  So two scorers fitted on different labels (e.g. of another search budget) are
compared by the same values, on games neither was fitted on.  ``--rounds`` picks the label
rounds (default: round 0 only).

``--precise N`` replays the held-out games of the first ``--shards`` shards of each round (the
very games of the run: :func:`conquian_train.recipes.exit.play_games` with the run's config, checked
against the shard's rows) and searches each of their positions again with ``N`` playouts for
every legal action (no race, another seed): values precise enough to judge the labels
themselves.  The table then has the teacher too (the labels' best action) and splits every
regret by phase (offers: take or refuse; discards), so it says how much of greedy's regret the
teacher removes and how much of that the student keeps.  A ceiling-free measurement: it reads
only what the run's players saw.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

from conquian_env.extras import one_line

with one_line("examples/held_out_regret.py"):
    from agents.scorer.scorer import KIND_SLOT, load_scorer
    from conquian_train.imitation import COLUMNS, ImitationData
    from conquian_train.scorer_fit import ScorerSettings, regret, scorer_positions


def _scores(scorer, x: np.ndarray) -> np.ndarray:
    return np.concatenate([scorer(x[i : i + 8192]) for i in range(0, len(x), 8192)] or [np.zeros((0, x.shape[1]))])


def precise_labels(
    run: Path, rounds: list[int], shards: int | None, playouts: int, seed: int
) -> tuple[ImitationData, ImitationData]:
    """The held-out searched positions of the first ``shards`` shards of each round: their shard
    labels and the same positions searched again at ``playouts`` for every action (``z`` = 0)."""
    from agents.registry import make_agent
    from agents.scorer.scorer import ScorerAgent
    from agents.search.pimc import analyze
    from conquian_train import recipes
    from conquian_train.recipes.exit import MAY_CHANGE, ExItConfig, play_games

    config, _ = recipes.config_from_args(ExItConfig, {"resume": str(run)}, MAY_CHANGE)
    holdout = ScorerSettings().holdout
    labelled, precise = [], []
    for r in rounds:
        student = make_agent("greedy") if r == 0 else ScorerAgent.from_scorer(load_scorer(run / f"round{r - 1}.npz"))
        paths = sorted(Path(run, "labels").glob(f"r{r:02d}_*.npz"))[:shards]
        for k, path in enumerate(paths):
            data, _ = ImitationData.load(path, config.features)
            rows, _ = play_games(student, config, r, k)
            if len(rows) != len(data) or not np.array_equal(np.asarray([x[0] for x in rows], data.obs.dtype), data.obs):
                raise SystemExit(f"error: the games replayed for {path} are not its games (made by other code?)")
            keep = [i for i, x in enumerate(rows) if x[3] < 0 and x[5] % holdout == 0]
            if not keep:
                continue
            values, _, _ = analyze([rows[i][2] for i in keep], iterations=playouts, z=0.0, seed=seed + 1000 * r + k)
            part = ImitationData(*(getattr(data, column)[keep] for column in COLUMNS))
            labelled.append(part)
            precise.append(dataclasses.replace(part, q=values.astype(np.float16)))
            print(f"  round {r} shard {k}: {len(keep)} held-out positions searched again", file=sys.stderr)
    if not precise:
        raise SystemExit("error: no held-out searched position in those shards")
    return ImitationData.concatenate(labelled), ImitationData.concatenate(precise)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a conquian-train exit run folder (its labels/)")
    parser.add_argument("models", nargs="+", help="scorer files (.npz) to measure")
    parser.add_argument("--rounds", nargs="+", type=int, default=[0], help="label rounds to read")
    parser.add_argument(
        "--precise", type=int, default=0, metavar="N",
        help="search the held-out positions again with N playouts per action (0: use the labels)",
    )  # fmt: skip
    parser.add_argument("--shards", type=int, default=None, help="with --precise: the first this many shards a round")
    parser.add_argument("--seed", type=int, default=12345, help="with --precise: the new search's seed")
    args = parser.parse_args(argv)
    run = Path(args.run)
    shards = [p for r in args.rounds for p in sorted(Path(args.run, "labels").glob(f"r{r:02d}_*.npz"))]
    if not shards:
        print(f"error: no label shards of rounds {args.rounds} in {args.run}/labels", file=sys.stderr)
        return 2
    if args.precise < 0 or (args.shards is not None and args.shards < 1):
        print("error: --precise must be >= 0 and --shards >= 1", file=sys.stderr)
        return 2
    if not args.precise:
        pos = scorer_positions(ImitationData.concatenate([ImitationData.load(p, "meld")[0] for p in shards]))
        held = pos["game"] % ScorerSettings().holdout == 0
        x, valid, q = pos["x"][held], pos["valid"][held], pos["q"][held]
        greedy = np.eye(x.shape[1], dtype=np.float32)[pos["greedy"][held]]
        print(f"{args.run} rounds {args.rounds}: {len(shards)} shards, {int(held.sum())} held-out positions")
        print(f"  greedy: regret {regret(greedy, valid, q):.5f}")
        for path in args.models:
            print(f"  {path}: regret {regret(_scores(load_scorer(path), x), valid, q):.5f}")
        return 0
    labelled, precise = precise_labels(run, args.rounds, args.shards, args.precise, args.seed)
    lab, pos = scorer_positions(labelled), scorer_positions(precise)
    x, valid, q = pos["x"], pos["valid"], pos["q"]
    offer = (x[..., KIND_SLOT + 2] * valid).sum(axis=1) > 0  # a refusal among the candidates: an offer
    picks = {"greedy": np.eye(x.shape[1], dtype=np.float32)[pos["greedy"]],
             "teacher (the labels' best)": np.where(valid, lab["q"], -np.inf)}  # fmt: skip
    for path in args.models:
        picks[path] = _scores(load_scorer(path), x)
    print(f"{args.run} rounds {args.rounds}: {len(q)} held-out positions ({int(offer.sum())} offers, "
          f"{int((~offer).sum())} discards), values of {args.precise} playouts per action")  # fmt: skip
    print(f"  {'who':40s} {'all':>8s} {'offers':>8s} {'discards':>8s}  share of greedy's regret left")
    base = regret(picks["greedy"], valid, q)
    for name, scores in picks.items():
        r_all = regret(scores, valid, q)
        r_off, r_dis = regret(scores[offer], valid[offer], q[offer]), regret(scores[~offer], valid[~offer], q[~offer])
        print(f"  {name:40s} {r_all:8.5f} {r_off:8.5f} {r_dis:8.5f}  {r_all / base:.2f}")
    return 0


if __name__ == "__main__":
    with one_line("examples/held_out_regret.py"):
        sys.exit(main())
