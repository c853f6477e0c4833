"""Training speed: the self-play trainer (``conquian-train selfplay``) against the SB3 recipe
(``conquian-train ppo``'s MaskablePPO with its defaults), measured in the same run.

::

    python benchmarks/bench_trainer.py [--seconds 60] [--ppo-seconds 60] [--threads 2]
    python benchmarks/bench_trainer.py --device cuda      # the network and update on a GPU

A *frame* is one decision of a learning seat, forced ones included, as SB3 counts its steps; the
rate of decisions that reached the network is printed beside it.  Start-up, compilation and the
first rollout are left out of both; both are timed by the wall clock and by this process's CPU
time (frames per CPU-second hold under load, where the wall clock does not).  The table shows
where each microsecond of a self-play frame goes.  Numbers: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts its threads
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def selfplay_rate(seconds: float, threads: int, device: str, hidden: tuple[int, ...], num_games: int,
                  overlap: bool, epochs: int, minibatch: int, observation: str, head: str) -> dict:  # fmt: skip
    from conquian_train.learner import cpu_has_bf16
    from conquian_train.recipes.selfplay import CLOCK, SelfPlayConfig, SelfPlayRun

    with tempfile.TemporaryDirectory() as out:
        config = SelfPlayConfig(out=out, torch_threads=threads, device=device, hidden=hidden, num_games=num_games,
                                overlap=overlap, epochs=epochs, minibatch=minibatch, observation=observation,
                                head=head, total_frames=10**12,
                                checkpoint_every=10**12)  # fmt: skip
        run = SelfPlayRun(config)
        run.start_segment()
        ahead = None
        for _ in range(2):  # compile, warm the caches
            _, _, _, ahead = run.iterate(ahead)
        run.clock = dict.fromkeys(CLOCK, 0.0)
        frames = rows = 0
        wall, cpu = time.perf_counter(), time.process_time()
        while time.perf_counter() - wall < seconds:
            f, _, r, ahead = run.iterate(ahead)
            frames, rows = frames + f, rows + r
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "frames": frames,
        "rows": rows,
        "wall": wall,
        "cpu": cpu,
        "clock": run.clock,
        "precision": "bfloat16" if run.learner.bf16 or (device == "cpu" and cpu_has_bf16()) else "float32",
    }


def ppo_rate(seconds: float) -> dict:
    import torch
    from sb3_contrib import MaskablePPO

    from conquian_train.envs import make_vec_env
    from conquian_train.recipes.ppo import TrainConfig

    c = TrainConfig()
    torch.set_num_threads(c.torch_threads)
    venv = make_vec_env(c.opponents, c.games_in_parallel, features=c.features, rules=c.rules, seed=c.seed,
                        max_snapshots=c.max_snapshots)  # fmt: skip
    model = MaskablePPO("MlpPolicy", venv, **c.ppo())
    rollout = venv.num_envs * c.n_steps
    model.learn(rollout)  # the first rollout and update: start-up left out
    steps = 0
    wall, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall < seconds:
        model.learn(rollout, reset_num_timesteps=False)
        steps += rollout
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    venv.close()
    return {"frames": steps, "wall": wall, "cpu": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="timed seconds of self-play")
    ap.add_argument("--ppo-seconds", type=float, default=60.0, help="timed seconds of the SB3 recipe (0: skip it)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads of the self-play trainer")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--hidden", default="128,128", help="hidden widths of the self-play network")
    ap.add_argument("--num-games", type=int, default=4096)
    ap.add_argument("--no-overlap", action="store_true", help="the update after the rollout, not beside the next")
    from conquian_train.recipes.selfplay import SelfPlayConfig

    ap.add_argument("--epochs", type=int, default=SelfPlayConfig.epochs, help="passes of the update over a rollout")
    ap.add_argument("--minibatch", type=int, default=SelfPlayConfig.minibatch, help="rows per gradient step")
    ap.add_argument(
        "--observation", default=SelfPlayConfig.observation, choices=("potential", "raw"), help="what the network reads"
    )
    from agents.networks.card_head import HEADS

    ap.add_argument("--head", default=SelfPlayConfig.head, choices=HEADS, help="the network's head")
    a = ap.parse_args()
    hidden = tuple(int(w) for w in a.hidden.split(","))
    sp = selfplay_rate(
        a.seconds,
        a.threads,
        a.device,
        hidden,
        a.num_games,
        not a.no_overlap,
        a.epochs,
        a.minibatch,
        a.observation,
        a.head,
    )
    print(f"cores {os.cpu_count()}, torch threads {a.threads}, OMP_WAIT_POLICY {os.environ.get('OMP_WAIT_POLICY')}, "
          f"device {a.device}, {sp['precision']}, network {list(hidden)}, {a.num_games} games, "
          f"overlap {not a.no_overlap}, {a.epochs} epochs of minibatches of {a.minibatch}, "
          f"observation {a.observation!r}, head {a.head!r}")  # fmt: skip
    f = sp["frames"]
    print(
        f"selfplay: {f / sp['wall']:>10,.0f} frames/s wall  {f / sp['cpu']:>10,.0f} frames/CPU-s  "
        f"({sp['rows'] / sp['wall']:,.0f} network decisions/s, {sp['rows'] / f:.2f} per frame; {f:,} frames)"
    )
    print("where a self-play frame's time goes (microseconds of wall clock per frame; with overlap, update is the")
    print("update's time beyond the rollout collected beside it):")
    for k, v in sp["clock"].items():
        print(f"  {k:8s} {v / f * 1e6:8.3f}")
    print(f"  {'total':8s} {sp['wall'] / f * 1e6:8.3f}")
    if a.ppo_seconds > 0:
        pp = ppo_rate(a.ppo_seconds)
        print(
            f"ppo (SB3 MaskablePPO, the recipe's defaults): {pp['frames'] / pp['wall']:>10,.0f} steps/s wall  "
            f"{pp['frames'] / pp['cpu']:>10,.0f} steps/CPU-s  ({pp['frames']:,} steps)"
        )
        print(
            f"ratio selfplay / ppo: {(f / sp['wall']) / (pp['frames'] / pp['wall']):.1f}x wall, "
            f"{(f / sp['cpu']) / (pp['frames'] / pp['cpu']):.1f}x per CPU-second"
        )


if __name__ == "__main__":
    main()
