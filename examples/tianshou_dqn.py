"""Self-play DQN on Conquian with Tianshou 2.x: one masked Q-network plays both seats.

Run: ``python examples/tianshou_dqn.py --steps 20000`` (needs ``pip install tianshou``).

Tianshou's own PettingZoo recipe (``Collector`` + ``MultiAgentOffPolicyAlgorithm``) on
:class:`conquian_env.integrations.tianshou.ConquianTianshouEnv`, which credits each seat
with its own result (Tianshou's ``PettingZooEnv`` would credit the last mover only) and
gives numeric infos.  The same ``DQN`` is given for both seats: self-play.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(steps: int = 300, seed: int = 0, batch_size: int = 64, update_every: int = 16, verbose: bool = True) -> dict:
    """Collect ``steps`` env steps of self-play, learning as it goes; returns a few statistics."""
    import torch
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.utils.net.common import Net
    from tianshou.utils.torch_utils import policy_within_training_step

    from conquian_env.integrations.tianshou import ConquianTianshouEnv

    torch.set_num_threads(1)  # one thread per process: many times faster on small machines
    torch.manual_seed(seed)
    np.random.seed(seed)  # Tianshou's exploration noise draws from numpy's global generator
    env = ConquianTianshouEnv()
    net = Net(
        state_shape=env.observation_space["observation"].shape, action_shape=env.action_space.n, hidden_sizes=[128, 128]
    )
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.2, eps_inference=0.0)
    dqn = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), gamma=1.0, target_update_freq=100)
    algo = MultiAgentOffPolicyAlgorithm(algorithms=[dqn, dqn], env=env)
    envs = DummyVectorEnv([ConquianTianshouEnv for _ in range(2)])
    envs.seed(seed)
    buffer = VectorReplayBuffer(total_size=20_000, buffer_num=2)
    collector = Collector(algo, envs, buffer, exploration_noise=True)
    collector.reset()

    collected = games = updates = 0
    start = time.perf_counter()
    while collected < steps:
        with policy_within_training_step(algo.policy):  # eps_training for the collection, and update()
            stats = collector.collect(n_step=update_every)
            collected += stats.n_collected_steps
            games += stats.n_collected_episodes
            if len(buffer) >= batch_size:
                algo.update(buffer=buffer, sample_size=batch_size)
                updates += 1
    elapsed = time.perf_counter() - start
    rows = buffer[buffer.sample_indices(0)]
    out = {
        "env_steps": collected,
        "games": games,
        "updates": updates,
        "illegal": int(rows.info.illegal_action.sum()),
        "steps_per_s": collected / elapsed,
    }
    if verbose:
        print(out)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="env steps to collect (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(steps=args.steps, seed=args.seed)
