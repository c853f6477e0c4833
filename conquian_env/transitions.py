"""Per-seat transitions from the AEC stream, for learners written for alternating turns.

A Conquian turn is several decisions by the same player (take, meld cards one by one,
finish, discard), and the reward arrives only when the game ends, for both players at
once.  Loops written for strictly alternating turns (``obs -> action -> the other
player's obs``) pair observations with the wrong player's next observation and give the
final reward to the wrong transition.  :class:`TransitionRecorder` does the bookkeeping:
a transition of a seat runs from one of its decisions to its *own* next observation, and
the game's result closes the last transition of each seat::

    from conquian_env.transitions import TransitionRecorder

    rec = TransitionRecorder()
    env.reset(seed=0)
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        for t in rec.observe(agent, obs, reward, termination or truncation):
            buffer.add(agent, *t)           # obs, mask, action, reward, next_obs, next_mask, done
        action = None if termination or truncation else my_policy(obs)
        rec.act(agent, obs, action)
        env.step(action)

Every decision of a seat gives exactly one transition; rewards are 0 except on the last
transition of each seat, which has ``done=True`` and that seat's result (+1, -1 or 0).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class Transition(NamedTuple):
    """One decision of one seat and what that seat saw next."""

    obs: np.ndarray
    mask: np.ndarray
    action: int
    reward: float
    next_obs: np.ndarray
    next_mask: np.ndarray
    done: bool


class TransitionRecorder:
    """Builds :class:`Transition` s per seat from ``env.last()`` and the actions taken."""

    def __init__(self) -> None:
        self._pending: dict[str, tuple[np.ndarray, np.ndarray, int]] = {}

    def observe(self, agent: str, observation: dict[str, Any], reward: float, done: bool) -> list[Transition]:
        """Call with ``env.last()`` for ``agent`` before it acts: returns the transition this
        observation completes (its previous decision), or nothing at its first decision."""
        pending = self._pending.pop(agent, None)
        if pending is None:
            if reward:
                raise ValueError(f"{agent} got reward {reward} before making any decision")
            return []
        obs, mask, action = pending
        next_obs = np.asarray(observation["observation"])
        next_mask = np.asarray(observation["action_mask"])
        return [Transition(obs, mask, action, float(reward), next_obs, next_mask, bool(done))]

    def act(self, agent: str, observation: dict[str, Any], action: int | None) -> None:
        """Record ``agent``'s decision (``None`` for the step that removes a finished agent)."""
        if action is None:
            self._pending.pop(agent, None)
            return
        obs = np.array(observation["observation"], copy=True)
        mask = np.array(observation["action_mask"], copy=True)
        self._pending[agent] = (obs, mask, int(action))

    def reset(self) -> None:
        """Forget unfinished transitions (call at each new game)."""
        self._pending.clear()
