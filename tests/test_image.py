"""The rgb_array render mode: pictures of the table (conquian_env.image)."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import conquian_env
from conquian_env.image import FRAME_SIZE, render_rgb
from conquian_env.wrappers import SingleAgentEnv
from tests.conftest import permute_for

pytest.importorskip("PIL")


def _play(env, moves: int, pick: int = 0):
    env.reset(seed=7)
    frames = [env.render()]
    for _ in range(moves):
        if env.unwrapped.game.is_terminal():
            break
        env.step(env.unwrapped.legal_actions()[pick])
        frames.append(env.render())
    return frames


def test_aec_frames_have_the_gymnasium_shape_and_follow_the_game():
    frames = _play(conquian_env.env(render_mode="rgb_array"), 40)
    w, h = FRAME_SIZE
    for f in frames:
        assert f.shape == (h, w, 3) and f.dtype == np.uint8
    assert sum(not np.array_equal(a, b) for a, b in zip(frames, frames[1:], strict=False)) >= 30
    again = _play(conquian_env.env(render_mode="rgb_array"), 40)
    assert all(np.array_equal(a, b) for a, b in zip(frames, again, strict=True)), "identical states, identical frames"


def test_pettingzoo_render_test_with_rgb_array():
    from pettingzoo.test import render_test

    w, h = FRAME_SIZE
    render_test(conquian_env.env, custom_tests={"rgb_array": lambda f: f.shape == (h, w, 3) and f.dtype == np.uint8})


def test_single_agent_frames_hide_the_opponents_hand():
    env = SingleAgentEnv(opponent="greedy", seat=0, render_mode="rgb_array")
    env.reset(seed=3)
    rng = random.Random(3)
    checked = 0
    while not env.game.is_terminal() and checked < 15:
        state = env.game
        if state.hands[1] & ~state.chosen:
            base = render_rgb(state, ("agent", "opponent"), observer=0)
            assert np.array_equal(env.render(), base)
            variant = permute_for(state, 0, rng)
            assert np.array_equal(render_rgb(variant, ("agent", "opponent"), observer=0), base)
            # the referee's view does show the difference
            if variant.hands[1] != state.hands[1]:
                assert not np.array_equal(render_rgb(variant), render_rgb(state))
            checked += 1
        env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert checked >= 5


def test_gymnasium_checker_with_rgb_array_render():
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(SingleAgentEnv(opponent="random", render_mode="rgb_array"))
