"""Self-play DQN on Conquian with Tianshou 2.x: one masked Q-network plays both seats.

Run: ``python examples/tianshou_dqn.py --steps 20000`` (needs ``pip install tianshou``).

Tianshou's own PettingZoo recipe (``Collector`` + ``MultiAgentOffPolicyAlgorithm``) on
:class:`conquian_env.integrations.tianshou.ConquianTianshouEnv`, which credits each seat
with its own result (Tianshou's ``PettingZooEnv`` would credit the last mover only) and
gives numeric infos.  The same ``DQN`` is given for both seats: self-play.  It learns from
:class:`~conquian_env.integrations.tianshou.SeatReplayBuffer`'s ``learn`` buffer, where each
decision's ``obs_next`` is the same seat's next observation: every row is one seat's own
view, so gamma = 1 and one network for both seats need no sign flip (the Collector's rows
pair a decision with the other seat's view whenever the turn passes).
"""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np

from conquian_env.extras import one_line


def main(steps: int = 300, seed: int = 0, batch_size: int = 64, update_every: int = 16, verbose: bool = True) -> dict:
    """Collect ``steps`` env steps of self-play, learning as it goes; returns a few statistics."""
    import torch
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector
    from tianshou.env import DummyVectorEnv
    from tianshou.utils.net.common import Net
    from tianshou.utils.torch_utils import policy_within_training_step

    from conquian_env.integrations.tianshou import ConquianTianshouEnv, SeatReplayBuffer

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
    buffer = SeatReplayBuffer(total_size=20_000, buffer_num=2)  # the Collector's rows, and buffer.learn
    collector = Collector(algo, envs, buffer, exploration_noise=True)
    collector.reset()

    # Tianshou logs a line per collect that the two-seat reward vector of its episode
    # returns is summarised flattened (each seat's return, as wanted here): not shown
    stats_log = logging.getLogger("tianshou.data.stats")
    flattened = _DropFlattenedNotice()
    stats_log.addFilter(flattened)
    collected = games = updates = 0
    start = time.perf_counter()
    try:
        while collected < steps:
            with policy_within_training_step(algo.policy):  # eps_training for the collection, and update()
                stats = collector.collect(n_step=update_every)
                collected += stats.n_collected_steps
                games += stats.n_collected_episodes
                if len(buffer.learn) >= batch_size:  # each seat's decision, to that seat's own next view
                    algo.update(buffer=buffer.learn, sample_size=batch_size)
                    updates += 1
    finally:
        stats_log.removeFilter(flattened)
    elapsed = time.perf_counter() - start
    rows = buffer[buffer.sample_indices(0)]
    learned = buffer.learn[buffer.learn.sample_indices(0)]
    out = {
        "env_steps": collected,
        "games": games,
        "updates": updates,
        "illegal": int(rows.info.illegal_action.sum()),
        "steps_per_s": collected / elapsed,
        "learn_rows": len(buffer.learn),
        "learn_rows_own_next": int((learned.obs.agent_id == learned.obs_next.agent_id).sum()),
    }
    if verbose:
        print(out)
    return out


class _DropFlattenedNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "only 1D sequences are supported" not in record.getMessage()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="env steps to collect (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with one_line("examples/tianshou_dqn.py"):
        main(steps=args.steps, seed=args.seed)
