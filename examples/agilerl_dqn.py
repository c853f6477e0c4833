"""Self-play DQN on Conquian with AgileRL: one masked DQN agent plays both seats.

Run: ``python examples/agilerl_dqn.py --steps 20000`` (needs ``pip install agilerl``; AgileRL
pins ``pettingzoo<1.27``, which conquian-env admits down to 1.25).

AgileRL's two-player tutorial loop, with its transition bookkeeping (which assumes
alternating turns) replaced by :class:`conquian_env.integrations.agilerl.SeatTransitions`:
each seat's transition runs from one of its decisions to its own next observation, and the
last one of each seat carries that seat's result.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from conquian_env.extras import one_line


def main(steps: int = 300, seed: int = 0, batch_size: int = 64, learn_every: int = 16, verbose: bool = True) -> dict:
    """Play ``steps`` decisions of self-play, learning as it goes; returns a few statistics."""
    import torch
    from agilerl.algorithms.dqn import DQN
    from agilerl.components.replay_buffer import ReplayBuffer
    from gymnasium import spaces

    import conquian_env
    from conquian_env.actions import NUM_ACTIONS
    from conquian_env.integrations.agilerl import SeatTransitions, masked_action
    from conquian_env.observation import OBS_SIZE

    torch.set_num_threads(1)  # one thread per process: many times faster on small machines
    torch.manual_seed(seed)
    env = conquian_env.env()
    agent = DQN(
        observation_space=spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32),
        action_space=spaces.Discrete(NUM_ACTIONS),
        net_config={"head_config": {"hidden_size": [128, 128]}},
        batch_size=batch_size,
        lr=1e-3,
        learn_step=learn_every,
        gamma=1.0,
        tau=0.01,
    )
    memory = ReplayBuffer(max_size=20_000)
    rng = np.random.default_rng(seed)
    epsilon = 0.2

    seats = SeatTransitions(memory)
    decisions = games = illegal = learn_calls = 0
    results: list[float] = []
    start = time.perf_counter()
    while decisions < steps:
        env.reset(seed=int(rng.integers(2**31)))
        for seat in env.agent_iter():
            obs, reward, termination, truncation, info = env.last()
            seats.observe(seat, obs, reward, termination or truncation)
            if termination or truncation:
                if seat == "player_0":
                    results.append(float(reward))
                action = None
            else:
                action = masked_action(agent, obs, epsilon)
                illegal += int(not obs["action_mask"][action])
                decisions += 1
                if decisions % learn_every == 0 and len(memory) >= batch_size:
                    agent.learn(memory.sample(batch_size))
                    learn_calls += 1
            seats.act(seat, obs, action)
            env.step(action)
        games += 1
    elapsed = time.perf_counter() - start
    stats = {
        "decisions": decisions,
        "transitions": seats.transitions,
        "games": games,
        "learn_calls": learn_calls,
        "illegal": illegal,
        "steps_per_s": decisions / elapsed,
        "player_0_mean_result": float(np.mean(results)) if results else 0.0,
    }
    if verbose:
        print(stats)
    return stats


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="decisions to play (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with one_line("examples/agilerl_dqn.py"):
        main(steps=args.steps, seed=args.seed)
