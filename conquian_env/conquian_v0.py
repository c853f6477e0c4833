"""Conquian, version 0, imported as PettingZoo's classic environments are (``from
pettingzoo.classic import gin_rummy_v4``)::

    from conquian_env import conquian_v0

    env = conquian_v0.env(render_mode="ansi")          # AEC, with PettingZoo's standard wrappers
    env.reset(seed=42)
    for agent in env.agent_iter():
        observation, reward, termination, truncation, info = env.last()
        action = None if termination or truncation else env.action_space(agent).sample(observation["action_mask"])
        env.step(action)

    par = conquian_v0.parallel_env()                    # the same game as a ParallelEnv
    raw = conquian_v0.raw_env()                          # without the wrappers

The version is the environment's: a new version number is a new game for a learner (other
actions, observations or rewards), and an old version keeps its module, so code written for
``conquian_v0`` keeps meaning the same game.  The game itself, its options and its tables
(agents, actions, observation, state, rewards) are those of :mod:`conquian_env.env`;
``env.metadata["name"]`` is ``"conquian_v0"`` and ``pettingzoo.make("aec", "Conquian-v0")``
gives the same environment.

Version history

* v0: the first version: two agents, ``Discrete(85)`` actions with an action mask, the
  observation of :mod:`conquian_env.observation` (the pieces of
  :data:`conquian_env.layout.OBSERVATION`: 456 values), rewards +1 / -1 / 0; one rule variant,
  ``forcing`` (:class:`conquian_env.rules.Rules`, ``env(forcing=True)``), seen in the observation.
  A new rule field adds an observation piece, so it comes with a new version
  (docs/development.md, "The environment's version").
"""

from __future__ import annotations

from .env import env, parallel_env, raw_env

__all__ = ["env", "parallel_env", "raw_env"]
