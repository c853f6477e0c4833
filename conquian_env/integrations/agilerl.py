"""Conquian for AgileRL: each seat's transitions of a self-play AEC loop, into AgileRL's buffers.

Needs ``agilerl`` (2.58+; it pins ``pettingzoo<1.27``) and its ``tensordict``.  ``import
conquian_env`` never imports it; this module does.  AgileRL's two-player (self-play DQN)
tutorial pairs each observation with the *other* player's next one and gives the final
reward to the last mover: it assumes strictly alternating turns.  A Conquian turn is
several decisions and the result reaches both players at once, so that assignment puts
about half the transitions under the wrong seat.  :class:`SeatTransitions` replaces the
tutorial's bookkeeping: call it with each ``env.last()`` and each action, and it adds to
the buffer, per seat, the transition from one of that seat's decisions to its *own* next
observation, the last one of each seat carrying that seat's result (+1, -1 or 0)::

    from agilerl.algorithms.dqn import DQN
    from agilerl.components.replay_buffer import ReplayBuffer
    from conquian_env.integrations.agilerl import SeatTransitions, masked_action

    memory = ReplayBuffer(max_size=20_000)
    seats = SeatTransitions(memory)
    env = conquian_env.env()
    env.reset(seed=0)
    for seat in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        seats.observe(seat, obs, reward, termination or truncation)
        action = None if termination or truncation else masked_action(agent, obs, epsilon=0.1)
        seats.act(seat, obs, action)
        env.step(action)

The TensorDicts have AgileRL's field names (``obs``, ``action``, ``reward``, ``next_obs``,
``done``; float32 observations, batch size 1), as ``DQN.learn(memory.sample(n))`` reads
them.  (AgileRL's DQN masks the action it picks, not its learning target's next state.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..extras import missing

try:
    import torch
    from tensordict import TensorDict
except ImportError as err:
    raise missing(err, "conquian_env.integrations.agilerl", extra="agilerl") from None

from ..transitions import Transition, TransitionRecorder

__all__ = ["SeatTransitions", "masked_action", "to_tensordict"]


def to_tensordict(t: Transition) -> TensorDict:
    """One transition in AgileRL's replay-buffer layout (batch size 1)."""
    return TensorDict(
        {
            "obs": torch.as_tensor(np.asarray(t.obs, dtype=np.float32)[None]),
            "action": torch.tensor([[t.action]]),
            "reward": torch.tensor([[t.reward]], dtype=torch.float32),
            "next_obs": torch.as_tensor(np.asarray(t.next_obs, dtype=np.float32)[None]),
            "done": torch.tensor([[float(t.done)]]),
        },
        batch_size=[1],
    )


class SeatTransitions:
    """Per-seat transitions of the AEC stream, added to an AgileRL replay buffer
    (anything with ``add(TensorDict)``).  ``transitions`` counts what was added, and
    ``per_seat`` the rewards added for each seat."""

    def __init__(self, memory: Any):
        if not callable(getattr(memory, "add", None)):
            raise TypeError(f"memory must be a replay buffer with add(), got {memory!r}")
        self.memory = memory
        self._recorder = TransitionRecorder()
        self.transitions = 0
        self.per_seat: dict[str, float] = {}

    def observe(self, seat: str, observation: dict[str, Any], reward: float, done: bool) -> int:
        """Call with ``env.last()`` for ``seat`` before it acts; adds the transition this
        observation completes (none at the seat's first decision); returns how many."""
        added = self._recorder.observe(seat, observation, reward, done)
        for t in added:
            self.memory.add(to_tensordict(t))
            self.per_seat[seat] = self.per_seat.get(seat, 0.0) + t.reward
        self.transitions += len(added)
        return len(added)

    def act(self, seat: str, observation: dict[str, Any], action: int | None) -> None:
        """Record ``seat``'s decision (``None`` for the step that removes a finished seat)."""
        self._recorder.act(seat, observation, action)

    def reset(self) -> None:
        """Forget unfinished transitions (a game abandoned before its end)."""
        self._recorder.reset()


def masked_action(agent: Any, observation: dict[str, Any], epsilon: float = 0.0) -> int:
    """An AgileRL DQN-style agent's action (``get_action(obs, epsilon, action_mask=...)``)
    for one AEC observation, among the legal actions."""
    mask = np.asarray(observation["action_mask"])
    if not mask.any():
        raise ValueError("no legal action in this observation (the game is over): step None instead")
    act = agent.get_action(np.asarray(observation["observation"], np.float32)[None], epsilon, action_mask=mask[None])
    return int(np.asarray(act).reshape(-1)[0])
