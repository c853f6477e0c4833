"""Speed of the batched engine (conquian_env.vector), with references measured in the same run.

    python benchmarks/bench_vector.py [--quick] [--sizes 1,64,1024,8192] [--no-ppo]

Prints, for N games in lockstep (N = 1, 64, 1024, 8192 by default):

(a) raw engine, random legal play entirely in compiled code (``VectorGame.play_random``):
    decisions/s, on all cores;
(b) the Python-facing loop ``step(random_actions())`` without observations, and
(c) with observations and masks built for every step (``observe=True``);
(d) memory: bytes held per game by the engine and its observation/mask arrays;

and the references, measured in this process: OpenSpiel's C++ ``gin_rummy`` (random
play through pyspiel, when installed) and the scalar engine (``GameState`` in Python).

(e) MaskablePPO, the same network (raw observation, 64x64 MLP, torch on one thread),
    against ``greedy``: the batched SB3 VecEnv (``conquian_env.sb3.ConquianVecEnv``,
    256 games) next to the per-game path of the earlier train.py (8
    ``SingleAgentEnv`` in ``SubprocVecEnv`` workers, the Python greedy bot), each for the
    same number of learner steps: rollout collection steps/s (env + opponent + policy
    forward), whole training steps/s, and the split between collection and updates.

Each figure is the best of ``--repeats`` runs.  Compilation happens before timing
(numba caches it on disk after the first run).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_env import bench_engine, bench_openspiel_gin_rummy  # noqa: E402

from conquian_env import melds  # noqa: E402
from conquian_env.vector import VectorGame  # noqa: E402


def best_of(repeats: int, fn) -> float:
    return max(fn() for _ in range(repeats))


def raw_rate(n: int, decisions: int) -> float:
    games = VectorGame(n, seed=0, observations=False)
    games.play_random(5)  # compiled already: this only warms the caches
    t = time.perf_counter()
    games.play_random(decisions)
    return n * decisions / (time.perf_counter() - t)


def step_rate(n: int, steps: int, observe: bool) -> float:
    games = VectorGame(n, seed=0, observations=observe)
    rng = np.random.default_rng(0)
    for _ in range(3):
        games.step(games.random_actions(rng), observe=observe)
    t = time.perf_counter()
    for _ in range(steps):
        games.step(games.random_actions(rng), observe=observe)
    return n * steps / (time.perf_counter() - t)


def memory_per_game(n: int) -> tuple[float, float]:
    games = VectorGame(n, seed=0)
    engine = games.state.nbytes
    arrays = games.observations.nbytes + games.masks.nbytes
    return engine / n, arrays / n


def ppo_rates(kind: str, total: int) -> dict[str, float]:
    """Learner steps/s of MaskablePPO on one env path; collection and update time apart."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import SubprocVecEnv, VecMonitor

    torch.set_num_threads(1)
    if kind == "batched":
        from conquian_env.sb3 import ConquianVecEnv

        venv = VecMonitor(ConquianVecEnv(256, opponent="greedy", seed=0))
        n_steps = 64
    else:
        from conquian_env.wrappers import SingleAgentEnv

        venv = VecMonitor(
            SubprocVecEnv([lambda: SingleAgentEnv(opponent="greedy") for _ in range(8)], start_method="fork")
        )
        n_steps = 2048
    times = {"collect": 0.0}

    class Clock(BaseCallback):
        def _on_rollout_start(self) -> None:
            self.t = time.perf_counter()

        def _on_rollout_end(self) -> None:
            times["collect"] += time.perf_counter() - self.t

        def _on_step(self) -> bool:
            return True

    model = MaskablePPO(
        "MlpPolicy",
        venv,
        n_steps=n_steps,
        batch_size=2048,
        n_epochs=2,
        policy_kwargs={"net_arch": [64, 64]},
        seed=0,
        device="cpu",
        verbose=0,
    )
    model.learn(n_steps * venv.num_envs)  # warm-up: compile, fork, first rollout
    times["collect"] = 0.0
    t = time.perf_counter()
    model.learn(total, reset_num_timesteps=True, callback=Clock())
    wall = time.perf_counter() - t
    steps = model.num_timesteps
    venv.close()
    return {
        "steps": steps,
        "wall": wall,
        "collect_rate": steps / times["collect"],
        "train_rate": steps / wall,
        "collect_share": times["collect"] / wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,64,1024,8192", help="numbers of games in lockstep")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="short runs (a smoke test of the script)")
    parser.add_argument("--no-ppo", action="store_true", help="skip the MaskablePPO comparison")
    parser.add_argument("--ppo-steps", type=int, default=65_536, help="learner steps per PPO measurement")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    scale = 0.05 if args.quick else 1.0

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores")
    t = time.perf_counter()
    VectorGame(2, seed=0).step(np.array([81, 81]))
    VectorGame(300, seed=0).play_random(2)
    print(f"compile / load of the kernels: {time.perf_counter() - t:.1f} s")

    ref = best_of(args.repeats, lambda: _ref_rate(max(5, int(300 * scale))))
    scalar = best_of(args.repeats, lambda: _scalar_rate(max(20, int(1000 * scale))))
    print(
        f"reference OpenSpiel gin_rummy (C++ via pyspiel, one core): {ref:,.0f} decisions/s"
        if ref
        else "reference OpenSpiel gin_rummy: pyspiel not installed (pip install open_spiel), skipped"
    )
    print(f"reference scalar engine (GameState, Python, one core): {scalar:,.0f} decisions/s")
    print()
    print(
        f"{'N':>6} {'raw dec/s':>12} {'step dec/s':>12} {'obs steps/s':>12} "
        f"{'engine B/game':>14} {'obs+mask B/game':>16}"
    )
    rows = {}
    budget = int(4_000_000 * scale)
    for n in sizes:
        raw = best_of(args.repeats, lambda n=n: raw_rate(n, max(20, budget // n)))
        stepped = best_of(args.repeats, lambda n=n: step_rate(n, max(5, int(400_000 * scale) // n), False))
        observed = best_of(args.repeats, lambda n=n: step_rate(n, max(5, int(300_000 * scale) // n), True))
        eng, arr = memory_per_game(n)
        rows[n] = (raw, stepped, observed)
        print(f"{n:>6} {raw:>12,.0f} {stepped:>12,.0f} {observed:>12,.0f} {eng:>14,.0f} {arr:>16,.0f}")
    print(
        "peak resident memory of this process so far: "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )
    big = max(sizes)
    raw, stepped, observed = rows[big]
    print()
    print(
        f"RESULT raw engine (N={big}, random legal play, compiled loop): {raw:,.0f} decisions/s (target >= 1,000,000)"
    )
    if ref:
        print(f"RESULT raw engine / OpenSpiel gin_rummy = {raw / ref:.1f}x; / scalar engine = {raw / scalar:.0f}x")
    print(f"RESULT step() with observations and masks (N={big}): {observed:,.0f} steps/s (target >= 300,000)")
    if args.no_ppo:
        return
    total = max(8192, int(args.ppo_steps * scale))
    print()
    print(f"MaskablePPO vs greedy, 64x64 MLP, torch 1 thread, {total:,} learner steps per path:")
    res = {}
    for kind in ("per-game", "batched"):
        r = res[kind] = ppo_rates(kind, total)
        print(
            f"  {kind:>8}: collection {r['collect_rate']:>9,.0f} steps/s, training {r['train_rate']:>8,.0f} steps/s, "
            f"{r['collect_share']:.0%} of the time collecting, {1 - r['collect_share']:.0%} updating "
            f"({r['steps']:,} steps in {r['wall']:.1f} s)"
        )
    b, p = res["batched"], res["per-game"]
    print(
        f"RESULT PPO batched / per-game: collection {b['collect_rate'] / p['collect_rate']:.1f}x (target >= 10x), "
        f"whole training {b['train_rate'] / p['train_rate']:.1f}x (target >= 2x)"
    )


def _ref_rate(games: int) -> float:
    measured = bench_openspiel_gin_rummy(games, 0)
    return 0.0 if measured is None else measured[0] / measured[1]


def _scalar_rate(games: int) -> float:
    melds.clear_caches()  # every run from cold meld memo tables, as bench_env.py measures
    n, dt, _ = bench_engine(games, 0)
    return n / dt


if __name__ == "__main__":
    main()
