"""Games a second of the scorer against greedy: the arena's loop (the reference, measured in the
same run) against the compiled games of :mod:`agents.scorer.selfplay_kernels`, the same deals.

::

    python benchmarks/bench_selfplay.py [--arena-games 200] [--games 20000]

Prints both rates and their ratio, and checks on the reference's deals that both loops end
every game the same way.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.greedy.greedy import GreedyAgent  # noqa: E402
from agents.scorer.scorer import DEFAULT_SCORER, ScorerAgent, load_scorer  # noqa: E402
from agents.scorer.scorer_kernels import pack  # noqa: E402
from agents.scorer.selfplay_kernels import GREEDY, play_games  # noqa: E402
from conquian_arena.match import play_game  # noqa: E402
from conquian_env.vector import deal_cards  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arena-games", type=int, default=200)
    ap.add_argument("--games", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    net = pack(load_scorer(DEFAULT_SCORER))
    rng = np.random.default_rng(a.seed)
    deals = np.stack([rng.permutation(40) for _ in range(max(a.games, a.arena_games))])
    firsts, seats = np.arange(len(deals)) % 2, (np.arange(len(deals)) // 2) % 2
    kinds = np.full(len(deals), GREEDY)
    play_games(deals[:4], firsts[:4], seats[:4], kinds[:4], 0, net, record=False)  # compile
    bots = [ScorerAgent(str(DEFAULT_SCORER)), GreedyAgent(), GreedyAgent()]
    t = time.perf_counter()
    arena = []
    for k in range(a.arena_games):
        hands, stock = deal_cards(deals[k])
        players = [bots[0], bots[1]] if seats[k] == 0 else [bots[2], bots[0]]
        rec = play_game(players, hands=hands, stock=stock, first=int(firsts[k]))
        arena.append(-1 if rec.winner is None else rec.winner)
    arena_rate = a.arena_games / (time.perf_counter() - t)
    t = time.perf_counter()
    _, _, _, res = play_games(deals[: a.games], firsts[: a.games], seats[: a.games], kinds[: a.games], 0, net,
                              record=False)  # fmt: skip
    compiled_rate = a.games / (time.perf_counter() - t)
    same = int(np.sum(res[: a.arena_games] == np.array(arena)))
    print(f"threads: numba {os.environ.get('NUMBA_NUM_THREADS', 'default')}, cores {os.cpu_count()}")
    print(f"arena (Python, one process):  {arena_rate:10.1f} games/s  ({a.arena_games} games)")
    print(f"compiled (selfplay_kernels):  {compiled_rate:10.1f} games/s  ({a.games} games)")
    print(f"ratio: {compiled_rate / arena_rate:.0f}x; the same result in {same} of {a.arena_games} reference games")


if __name__ == "__main__":
    main()
