"""Speed of the Conquian engine and of the wrapped AEC environment (prints numbers).

    python benchmarks/bench_env.py [--games 3000] [--repeats 3] [--seed 0]

Both measurements play complete random games (uniform over the legal actions) in
this one process, on one core:

(a) engine: ``GameState.legal_actions()`` + ``apply()``, the loop a search bot runs;
(b) env: ``conquian_env.env()`` (order-enforcing wrapper included) through
    ``agent_iter()`` / ``last()`` / ``step()``, so the observation array and the action
    mask are built at every step, the mask read from the observation.

Each figure is the best of ``--repeats`` runs over the same seeded games, from a cold
start of the meld memo tables in each run (``melds.clear_caches()``), so no run profits
from another's cache.  Decisions/steps count only real decisions, not the dead steps
that end an AEC game.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import time

import conquian_env
from conquian_env import melds
from conquian_env.game import new_game


def bench_engine(games: int, seed: int) -> tuple[int, float, list[int]]:
    rng = random.Random(seed)
    decisions = 0
    results = [0, 0, 0]  # draws, player 0 wins, player 1 wins
    start = time.perf_counter()
    for g in range(games):
        state = new_game(seed + g)
        while state.phase != 4:
            legal = state.legal_actions()
            state.apply(legal[int(rng.random() * len(legal))])
            decisions += 1
        results[state.winner + 1] += 1
    return decisions, time.perf_counter() - start, results


def bench_env(games: int, seed: int) -> tuple[int, float]:
    rng = random.Random(seed)
    env = conquian_env.env()
    steps = 0
    start = time.perf_counter()
    for g in range(games):
        env.reset(seed=seed + g)
        for _agent in env.agent_iter():
            obs, _reward, term, trunc, _info = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = obs["action_mask"].nonzero()[0]
            env.step(int(legal[int(rng.random() * len(legal))]))
            steps += 1
    return steps, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=3000, help="random games per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement (best is reported)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; one core used")
    best_engine = best_env = 0.0
    for r in range(args.repeats):
        melds.clear_caches()
        n, dt, results = bench_engine(args.games, args.seed)
        best_engine = max(best_engine, n / dt)
        print(
            f"engine run {r + 1}: {n} decisions in {dt:.2f} s = {n / dt:,.0f} decisions/s "
            f"({n / args.games:.1f} per game; draws {results[0]}, p0 wins {results[1]}, p1 wins {results[2]})"
        )
    for r in range(args.repeats):
        melds.clear_caches()
        n, dt = bench_env(args.games, args.seed)
        best_env = max(best_env, n / dt)
        print(f"env    run {r + 1}: {n} steps in {dt:.2f} s = {n / dt:,.0f} steps/s")
    print(f"RESULT engine: {best_engine:,.0f} decisions/s (target >= 60,000)")
    print(f"RESULT env (wrapped AEC, obs + mask every step): {best_env:,.0f} steps/s (target >= 25,000)")


if __name__ == "__main__":
    main()
