"""The Gymnasium single-agent adapter and the ppo bot's loading path (real SB3 model)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from agents import SpecError, make_agent
from conquian_arena.match import deal_for_seed, play_game
from conquian_env.game import IllegalActionError
from conquian_env.rules import FORCING
from conquian_env.wrappers import SingleAgentEnv


def test_gymnasium_env_checker_passes():
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():  # the checker's unmasked random actions are penalised
        warnings.simplefilter("ignore")
        check_env(SingleAgentEnv(opponent="random"), skip_render_check=True)


def test_sb3_env_checker_passes():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(SingleAgentEnv(opponent="random"), warn=True)


def test_episode_rewards_and_masks():
    env = SingleAgentEnv(opponent="random", seat=1)
    results = set()
    for episode in range(30):
        obs, info = env.reset(seed=episode)
        assert env.seat == 1
        done = False
        total = 0.0
        while not done:
            mask = env.action_masks()
            assert mask.any() and np.array_equal(mask, info["action_mask"].astype(bool))
            obs, reward, done, truncated, info = env.step(int(np.flatnonzero(mask)[0]))
            assert not truncated
            total += reward
        assert total in (-1.0, 0.0, 1.0)
        results.add(info["result"])
        assert {"win": 1.0, "loss": -1.0, "draw": 0.0}[info["result"]] == total
    assert "draw" in results


def test_illegal_action_raises_and_same_seed_same_episode():
    env = SingleAgentEnv(opponent="random", seat=0, illegal_action="raise")
    obs1, _ = env.reset(seed=5)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    with pytest.raises(IllegalActionError, match="legal actions: .*refuse"):
        env.step(illegal)
    penalized = SingleAgentEnv(opponent="random", seat=0)
    penalized.reset(seed=5)
    with pytest.warns(UserWarning, match="illegal action"):
        _, reward, done, _, info = penalized.step(illegal)
    assert (reward, done, info["result"], info["illegal_action"]) == (-1.0, True, "loss", True)
    obs2, _ = SingleAgentEnv(opponent="random", seat=0).reset(seed=5)
    assert np.array_equal(obs1, obs2)


def test_bad_seat_and_opponent():
    with pytest.raises(ValueError, match="seat"):
        SingleAgentEnv(seat=2)
    with pytest.raises(ValueError, match="opponent"):
        SingleAgentEnv(opponent=42)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    sb3c = pytest.importorskip("sb3_contrib")
    env = SingleAgentEnv(opponent="random")
    model = sb3c.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, verbose=0)
    model.learn(128)
    path = tmp_path_factory.mktemp("model") / "tiny.zip"
    model.save(str(path))
    return path


def test_ppo_bot_loads_and_never_plays_illegal(tiny_model):
    bot = make_agent(f"ppo:{tiny_model}")
    stochastic = make_agent(f"ppo:{tiny_model},deterministic=false")
    assert bot.name == "ppo:tiny.zip"
    for seed in range(6):
        hands, stock = deal_for_seed(seed)
        opponent = make_agent("random", seed=seed)
        pair = [bot if seed % 2 else stochastic, opponent]
        record = play_game(pair if seed % 3 else pair[::-1], hands=hands, stock=stock, seed=seed)
        assert record.failure is None
        record.replay()  # every recorded action is legal


def test_ppo_bad_paths(tmp_path):
    with pytest.raises(SpecError, match="no model file"):
        make_agent(f"ppo:{tmp_path / 'missing.zip'}")
    corrupt = tmp_path / "corrupt.zip"
    corrupt.write_bytes(b"not a zip file")
    with pytest.raises(SpecError, match="cannot load"):
        make_agent(f"ppo:{corrupt}")


def test_step_takes_only_integer_action_ids():
    # before: int(action) played 80.9 as 80 and True as 1, and -1 / 85 counted as illegal moves
    env = SingleAgentEnv(opponent="random", seat=0)
    env.reset(seed=2)
    for bad in (80.9, True, np.float32(81), -1, 85, "80", np.array([80, 81])):
        with pytest.raises(ValueError, match="action"):
            env.step(bad)
    assert env.game.move_count == 0 and not env.game.is_terminal(), "a rejected action leaves the game as it was"
    obs, reward, done, _, _ = env.step(np.int64(81))  # numpy integers are fine
    assert env.game.move_count >= 1


def test_forcing_must_be_a_bool():
    # before: forcing="no" turned the variant on (bool("no") is True)
    for bad in ("no", 1, None):
        with pytest.raises(ValueError, match="forcing"):
            SingleAgentEnv(forcing=bad)
    assert SingleAgentEnv(forcing=np.bool_(True)).rules.forcing is True
    assert SingleAgentEnv(forcing=np.bool_(True)).rules == SingleAgentEnv(rules=FORCING).rules == FORCING


def test_an_opponents_bad_answer_is_blamed_on_the_opponent():
    # before: the opponent's illegal move raised IllegalActionError out of the learner's step()
    env = SingleAgentEnv(opponent=lambda obs, mask, view: 84, seat=0)  # 'no force' is never legal here
    env.reset(seed=1)
    with pytest.raises(RuntimeError, match="the opponent .* answered 84"):
        for _ in range(50):
            env.step(int(np.flatnonzero(env.action_masks())[0]))
    env = SingleAgentEnv(opponent=lambda obs, mask, view: 80.5, seat=1)
    with pytest.raises(RuntimeError, match="answered 80.5"):
        env.reset(seed=1)
