"""``conquian_env.conquian_v0``: the environment as a versioned module, as PettingZoo's classic
environments are imported (``from pettingzoo.classic import gin_rummy_v4``), checked with
PettingZoo's own tests."""

from __future__ import annotations

import numpy as np
from pettingzoo.test import api_test, parallel_api_test

import conquian_env
from conquian_env import conquian_v0


def test_the_versioned_module_passes_pettingzoos_api_tests():
    api_test(conquian_v0.env(), num_cycles=300)
    api_test(conquian_v0.raw_env(), num_cycles=100)
    parallel_api_test(conquian_v0.parallel_env(), num_cycles=300)


def test_it_is_the_same_game_as_the_package_env():
    assert conquian_v0.env is conquian_env.env and conquian_v0.raw_env is conquian_env.raw_env
    assert conquian_v0.parallel_env is conquian_env.parallel_env
    env = conquian_v0.env()
    assert env.metadata["name"] == conquian_v0.__name__.rsplit(".", 1)[1]  # "conquian_v0"


def test_its_docstring_holds_the_version_history_and_its_example_runs():
    doc = conquian_v0.__doc__
    assert "Version history" in doc and "* v0:" in doc
    env = conquian_v0.env(render_mode="ansi")  # the docstring's loop, as written there
    env.reset(seed=42)
    steps = 0
    for agent in env.agent_iter():
        observation, reward, termination, truncation, info = env.last()
        action = None if termination or truncation else env.action_space(agent).sample(observation["action_mask"])
        if action is not None:
            assert observation["action_mask"][action] == 1
        env.step(action)
        steps += 1
    assert steps > 2 and all(np.isfinite(list(env._cumulative_rewards.values())))


def test_version_0_is_the_observation_and_actions_it_shipped_with():
    """The version is what a learner sees (docs/development.md, "The environment's version"): another
    observation size (a new piece, a new rule field's) or another action count is conquian_v1."""
    env = conquian_v0.env()
    env.reset(seed=0)
    space = env.observation_space(env.agents[0])
    assert space["observation"].shape == (456,), "the observation changed: that is a new version, conquian_v1"
    assert env.action_space(env.agents[0]).n == 85, "the actions changed: that is a new version, conquian_v1"
