"""Speed of the Conquian engine and of the wrapped AEC environment (prints numbers).

    python benchmarks/bench_env.py [--games 3000] [--repeats 3] [--seed 0]

Both measurements play complete random games (uniform over the legal actions) in
this one process, on one core:

(a) engine: ``GameState.legal_actions()`` + ``apply()``, the loop a search bot runs;
(b) env: ``conquian_env.env()`` (order-enforcing wrapper included) through
    ``agent_iter()`` / ``last()`` / ``step()``, so the observation array and the action
    mask are built at every step, the mask read from the observation.

(c) reference, only when ``pyspiel`` is importable (``pip install open_spiel``): the C++
    OpenSpiel ``gin_rummy`` engine playing random games through its Python API
    (``legal_actions`` + ``apply_action``, chance outcomes sampled uniformly), measured in
    the same process so the ratio is meaningful on any machine.

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


def bench_openspiel_gin_rummy(games: int, seed: int) -> tuple[int, float] | None:
    try:
        import pyspiel
    except ImportError:
        return None
    rng = random.Random(seed)
    game = pyspiel.load_game("gin_rummy")
    decisions = 0
    start = time.perf_counter()
    for _ in range(games):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                state.apply_action(outcomes[int(rng.random() * len(outcomes))][0])
                continue
            legal = state.legal_actions()
            state.apply_action(legal[int(rng.random() * len(legal))])
            decisions += 1
    return decisions, time.perf_counter() - start


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
    best_ref = 0.0
    for r in range(args.repeats):
        measured = bench_openspiel_gin_rummy(max(1, args.games // 10), args.seed)
        if measured is None:
            print("reference: pyspiel not installed (pip install open_spiel), skipped")
            break
        n, dt = measured
        best_ref = max(best_ref, n / dt)
        print(f"ref    run {r + 1}: OpenSpiel gin_rummy (C++) {n} decisions in {dt:.2f} s = {n / dt:,.0f} decisions/s")
    print(f"RESULT engine: {best_engine:,.0f} decisions/s (target >= 60,000)")
    print(f"RESULT env (wrapped AEC, obs + mask every step): {best_env:,.0f} steps/s (target >= 25,000)")
    if best_ref:
        print(
            f"RESULT reference OpenSpiel gin_rummy: {best_ref:,.0f} decisions/s; "
            f"engine/reference = {best_engine / best_ref:.2f}, env/reference = {best_env / best_ref:.2f}"
        )


if __name__ == "__main__":
    main()
