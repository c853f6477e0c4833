"""Self-play DQN on Conquian with Tianshou 2.x: one masked Q-network plays both seats.

Run: ``python examples/tianshou_dqn.py --steps 20000`` (needs ``pip install tianshou``).

The game is driven as a plain PettingZoo AEC loop and its per-seat transitions go into a
Tianshou ``VectorReplayBuffer`` with one sub-buffer per seat, from which Tianshou's ``DQN``
learns.  :class:`conquian_env.transitions.TransitionRecorder` does the bookkeeping that a
Conquian turn needs (a turn is several decisions by one player; the result reaches both
players at once): each seat's transition runs from one of its decisions to its own next
observation, and the last one of each seat carries that seat's result.  (Tianshou's own
multi-agent pipeline, ``tianshou.env.PettingZooEnv`` + ``MultiAgentPolicy``, assumes
alternating turns: it would credit the final reward to the last mover only.  If you use it
anyway, create the env with ``conquian_env.env(numeric_infos=True)``: Tianshou's buffers
need the same info keys with numeric values on every step.)

Masks: the observation stored is ``Batch(obs=..., mask=...)``; Tianshou's Q-learning
policy masks illegal actions in acting and in the bootstrapped target (``obs_next.mask``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(steps: int = 300, seed: int = 0, batch_size: int = 64, update_every: int = 16, verbose: bool = True) -> dict:
    """Play ``steps`` decisions of self-play, learning as it goes; returns a few statistics."""
    import torch
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Batch, VectorReplayBuffer
    from tianshou.utils.net.common import Net
    from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

    import conquian_env
    from conquian_env.actions import NUM_ACTIONS
    from conquian_env.observation import OBS_SIZE
    from conquian_env.transitions import TransitionRecorder

    torch.set_num_threads(1)  # one thread per process: many times faster on small machines
    torch.manual_seed(seed)
    env = conquian_env.env()
    seats = {a: i for i, a in enumerate(env.possible_agents)}
    net = Net(state_shape=OBS_SIZE, action_shape=NUM_ACTIONS, hidden_sizes=[128, 128])
    policy = DiscreteQLearningPolicy(
        model=net, action_space=env.action_space("player_0"), eps_training=0.2, eps_inference=0.0
    )
    algo = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), gamma=1.0, target_update_freq=100)
    buffer = VectorReplayBuffer(total_size=20_000, buffer_num=len(seats))  # one sub-buffer per seat
    rng = np.random.default_rng(seed)

    def obs_batch(o: np.ndarray, m: np.ndarray) -> Batch:
        """A batch of one observation with its mask, as Tianshou's masked Q-policy reads it."""
        return Batch(obs=o[None].astype(np.float32), mask=m[None].astype(bool))

    decisions = transitions = games = illegal = updates = 0
    results: list[float] = []
    start = time.perf_counter()
    while decisions < steps:
        env.reset(seed=int(rng.integers(2**31)))
        recorder = TransitionRecorder()
        for agent in env.agent_iter():
            obs, reward, termination, truncation, info = env.last()
            for t in recorder.observe(agent, obs, reward, termination or truncation):
                buffer.add(
                    Batch(
                        obs=obs_batch(t.obs, t.mask),
                        act=np.array([t.action]),
                        rew=np.array([t.reward], dtype=np.float32),
                        terminated=np.array([t.done]),
                        truncated=np.array([False]),
                        obs_next=obs_batch(t.next_obs, t.next_mask),
                        info=Batch(),
                    ),
                    buffer_ids=[seats[agent]],
                )
                transitions += 1
            if termination or truncation:
                if agent == "player_0":
                    results.append(float(reward))
                action = None
            else:
                batch = Batch(obs=obs_batch(obs["observation"], obs["action_mask"]), info={})
                with torch.no_grad(), policy_within_training_step(policy), torch_train_mode(policy, False):
                    act = policy(batch).act
                    act = policy.add_exploration_noise(act, batch)
                action = int(act[0])
                illegal += int(not obs["action_mask"][action])
                decisions += 1
                if decisions % update_every == 0 and len(buffer) >= batch_size:
                    with policy_within_training_step(policy):
                        algo.update(buffer=buffer, sample_size=batch_size)
                    updates += 1
            recorder.act(agent, obs, action)
            env.step(action)
        games += 1
    elapsed = time.perf_counter() - start
    stats = {
        "decisions": decisions,
        "transitions": transitions,
        "games": games,
        "updates": updates,
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
    main(steps=args.steps, seed=args.seed)
