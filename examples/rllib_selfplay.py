"""Self-play PPO with action masks on RLlib's new API stack, then the policy as a bot.

Run: ``python examples/rllib_selfplay.py --iterations 50 --out runs/rllib`` (needs
``pip install "ray[rllib]"``).  Then play the checkpoint like any bot, e.g. with the bot
spec ``python:agents.networks.rllib_bot:RLlibAgent,path=runs/rllib``.

Both seats share one masked policy (:func:`conquian_train.rllib.ppo_config`);
sampling runs in ``--env-runners`` actors (0: in this process, the fastest on a machine
with two cores), each stepping ``--envs`` games at once.  Use ``--address`` to train on
a running Ray cluster (``ray start --head`` first).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from conquian_env.extras import one_line


def main(
    iterations: int = 1,
    train_batch_size: int = 400,
    minibatch_size: int = 100,
    num_env_runners: int = 0,
    num_envs_per_env_runner: int = 4,
    out: str | None = None,
    games: int = 4,
    opponent: str = "random",
    address: str | None = None,
    seed: int = 0,
    verbose: bool = True,
) -> dict:
    """Train ``iterations`` PPO iterations (each samples ``train_batch_size`` env steps),
    save a checkpoint to ``out`` (a temporary directory when None), play ``games`` games
    of the trained policy against the bot ``opponent`` (wins, draws, losses and the share of the
    decided games won: random draws 92% of its games against random, so for a run long enough
    to learn, ``opponent="greedy"`` shows more); returns a few statistics."""
    import ray

    from agents import make_agent
    from agents.networks.rllib_bot import RLlibAgent
    from conquian_arena import deal_for_seed, play_game
    from conquian_train.rllib import ppo_config

    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(address=address, num_cpus=None if address else 2, include_dashboard=False, log_to_driver=False)
    config = ppo_config(
        num_env_runners=num_env_runners,
        num_envs_per_env_runner=num_envs_per_env_runner,
        train_batch_size=train_batch_size,
        minibatch_size=minibatch_size,
        num_epochs=2,
        env_config={"illegal_action": "raise"},  # a masked action would stop training
        seed=seed,
    )
    algo = config.build_algo()
    steps = 0
    start = time.perf_counter()
    try:
        for i in range(iterations):
            result = algo.train()
            runners = result["env_runners"]
            steps = int(result.get("num_env_steps_sampled_lifetime", steps + runners["num_env_steps_sampled"]))
            if verbose:
                print(
                    f"iteration {i + 1}: {steps} env steps, "
                    f"episode length {runners.get('episode_len_mean', float('nan')):.1f}, "
                    f"{time.perf_counter() - start:.1f} s"
                )
        train_s = time.perf_counter() - start
        tmp = None if out else tempfile.TemporaryDirectory()
        path = Path(out or tmp.name).resolve()  # type: ignore[union-attr]
        algo.save_to_path(str(path))
        bot = RLlibAgent(str(path))
        other = make_agent(opponent, seed=seed)
        wins = losses = illegal = 0
        for g in range(games):
            hands, stock = deal_for_seed(seed * 1000 + g)
            seat = g % 2  # the trained policy takes both seats in turn
            players = [bot, other] if seat == 0 else [other, bot]
            record = play_game(players, hands=hands, stock=stock, seed=g)
            illegal += record.failure is not None
            wins += record.winner == seat
            losses += record.winner == 1 - seat
        if tmp is not None:
            tmp.cleanup()
    finally:
        algo.stop()
        if started_ray:
            ray.shutdown()
    stats = {
        "iterations": iterations,
        "env_steps": steps,
        "train_s": train_s,
        "steps_per_s": steps / train_s,
        "games": games,
        "opponent": opponent,
        "wins": wins,
        "draws": games - wins - losses,
        "losses": losses,
        "decided_won": wins / (wins + losses) if wins + losses else float("nan"),
        "failures": illegal,
        "checkpoint": str(path) if out else None,
    }
    if verbose:
        print(stats)
    return stats


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=1)
    parser.add_argument("--train-batch-size", type=int, default=400, help="env steps per iteration")
    parser.add_argument("--minibatch-size", type=int, default=100)
    parser.add_argument("--env-runners", type=int, default=0, help="sampling actors (0: in this process)")
    parser.add_argument("--envs", type=int, default=4, help="games stepped together per env runner")
    parser.add_argument("--out", default=None, help="checkpoint directory (default: a temporary one)")
    parser.add_argument("--games", type=int, default=4, help="games against --opponent afterwards")
    parser.add_argument("--opponent", default="random", help="the bot those games are played against (a bot spec)")
    parser.add_argument("--address", default=None, help="a running Ray cluster (default: a local instance)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with one_line("examples/rllib_selfplay.py", extra="rllib"):
        main(
            iterations=args.iterations,
            train_batch_size=args.train_batch_size,
            minibatch_size=args.minibatch_size,
            num_env_runners=args.env_runners,
            num_envs_per_env_runner=args.envs,
            out=args.out,
            games=args.games,
            opponent=args.opponent,
            address=args.address,
            seed=args.seed,
        )
