"""How well each way of dealing the unseen cards predicts the opponent's hidden hand.

::

    python -m conquian_train.recipes.belief generate --out runs/belief/test --seed 1 --games 2450 --chunk 350 \\
        --kinds greedy pimc:iterations=300 scorer random noisy:0.2:greedy ppo rollout:samples=8
    python benchmarks/bench_belief.py --data runs/belief/test [--model agents/data/conquian_belief.npz]

For every opponent kind in the held-out games of ``--data`` (games the model never saw: another
seed; the kinds the model was not fitted on are marked), the mean log loss and Brier score per
unseen card of the hidden hand for

* **uniform**: every unseen card ``n_opp / unseen``;
* **filter**: today's plausibility filter (the most plausible of ``tries`` uniform deals,
  :func:`agents.search._search_kernels.determinize`), its marginals estimated by ``deals`` of its deals
  per position and shrunk towards uniform by ``a`` pseudo-deals (the ``a`` of lowest log loss
  per kind is the one printed: the filter's best case);
* **model**: the belief model (:mod:`agents.search.belief`), the probabilities the search deals from;
* **model deals**: the marginals of the deals the search draws from it (card by card in
  proportion to the odds), estimated as the filter's are, shrunk the same way.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.search._search_kernels import filter_frequencies  # noqa: E402
from agents.search.belief import load_belief  # noqa: E402
from agents.search.belief_kernels import hand_frequencies, logits_batch  # noqa: E402
from conquian_train.recipes.belief import load_positions, pool_arrays, scores  # noqa: E402

SHRINK = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


def _best_shrunk(freq: np.ndarray, prior: np.ndarray, y: np.ndarray, deals: int) -> tuple[float, float, float]:
    best = None
    for a in SHRINK:
        p = (freq * deals + a * prior) / (deals + a)
        loss, brier = scores(p, y)
        if best is None or loss < best[0]:
            best = (loss, brier, a)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", nargs="+", default=["runs/belief/test"], help="run folders of generate")
    parser.add_argument("--model", default=None, help="belief model file (default: the shipped one)")
    parser.add_argument("--positions", type=int, default=2000, help="positions per kind at most (a random subset)")
    parser.add_argument("--deals", type=int, default=200, help="deals per position to estimate a deal's marginals")
    parser.add_argument("--tries", type=int, default=10, help="the filter's deals per determinization (the search's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    model = load_belief(args.model)
    trained = set(model.meta.get("trained_on", []))
    pos = load_positions(args.data)
    rng = np.random.default_rng(args.seed)
    print(f"model {args.model or 'shipped'}: {model.hidden} hidden units, fitted on {sorted(trained)}")
    print(f"data {args.data}: {len(pos['game'])} positions; filter tries={args.tries}, {args.deals} deals a position")
    head = f"{'opponent kind':<24} {'seen':>4} {'pos':>5} | {'log loss':^37} | {'Brier':^37}"
    print(head)
    sub = f"{'':<24} {'':>4} {'':>5} | " + " ".join(f"{n:>8}" for n in ("uniform", "filter", "model", "deals")) + " | "
    print(sub + " ".join(f"{n:>8}" for n in ("uniform", "filter", "model", "deals")))
    rows_out, t0 = [], time.perf_counter()
    for kind in sorted(set(pos["kind"].tolist())):
        idx = np.flatnonzero(pos["kind"] == kind)
        if len(idx) > args.positions:
            idx = np.sort(rng.choice(idx, args.positions, replace=False))
        part = {k: v[idx] for k, v in pos.items()}
        rows, pools, sizes, n_opps, labels = pool_arrays(part)
        logits = np.zeros((len(idx), 40))
        logits_batch(rows, pools, sizes, n_opps, *model.weights, logits)
        valid = np.arange(40)[None, :] < sizes[:, None]
        y = labels[valid]
        prior = np.broadcast_to((n_opps / np.maximum(sizes, 1))[:, None], labels.shape)[valid]
        with np.errstate(over="ignore"):
            p_model = (1 / (1 + np.exp(-logits)))[valid]
        f_filter = np.zeros_like(labels)
        f_deals = np.zeros_like(labels)
        for b in range(len(idx)):
            pool = pools[b, : sizes[b]]
            seed = int(rng.integers(1, 2**62))
            f_filter[b, : sizes[b]] = filter_frequencies(rows[b], pool, int(n_opps[b]), args.tries, seed, args.deals)
            with np.errstate(over="ignore"):
                odds = np.exp(logits[b, : sizes[b]])
            f_deals[b, : sizes[b]] = hand_frequencies(rows[b], pool, odds, int(n_opps[b]), seed, args.deals)
        uni = scores(prior, y)
        filt = _best_shrunk(f_filter[valid], prior, y, args.deals)
        mod = scores(p_model, y)
        deal = _best_shrunk(f_deals[valid], prior, y, args.deals)
        seen = "yes" if kind in trained else "NO"
        print(f"{kind:<24} {seen:>4} {len(idx):>5} | {uni[0]:8.4f} {filt[0]:8.4f} {mod[0]:8.4f} {deal[0]:8.4f} | "
              f"{uni[1]:8.4f} {filt[1]:8.4f} {mod[1]:8.4f} {deal[1]:8.4f}")  # fmt: skip
        rows_out.append((kind, mod[0] < filt[0] and mod[1] < filt[1]))
    beaten = [k for k, ok in rows_out if not ok]
    print(f"the model beats the filter (log loss and Brier) for {len(rows_out) - len(beaten)} of {len(rows_out)} kinds"
          + (f"; not for {beaten}" if beaten else "") + f" ({time.perf_counter() - t0:.0f} s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
