"""The PettingZoo AEC environment: PettingZoo's own checks and the adapter's promises.

PettingZoo's ``api_test``, ``seed_test`` and ``render_test`` run on ``conquian_env.env``
with and without the forcing variant, ``parallel_api_test`` on ``conquian_env.parallel_env``
(PettingZoo's turn-based conversion), without the unknown-option warning for PettingZoo's own
test option.  (``max_cycles_test`` does not apply: Conquian has no ``max_cycles`` option;
every game ends by the rules.)

Also checked: the ``Conquian-v0`` registry entry; the spaces; ``observe`` for both agents
at any time, including the real final observation after the end; zero masks for the
agent not to move; rewards and ``infos`` at the end; hidden information (a player's
observations do not change when the opponent's hidden cards and the unseen stock are
re-dealt); determinism, also across processes with different ``PYTHONHASHSEED``; bad
deals, bad actions and bad options; stepping after the end; ``render`` and ``state``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pettingzoo
import pytest
from gymnasium import spaces
from pettingzoo.test import api_test, parallel_api_test, render_test, seed_test
from pettingzoo.utils.env_logger import EnvLogger

import conquian_env
from conquian_env import actions
from conquian_env.cards import CARD_NAMES, cards_str, parse_card
from conquian_env.game import MELD, IllegalActionError
from conquian_env.observation import OBS_SIZE, STATE_SIZE, decode, decode_state
from conquian_env.rules import FORCING, STANDARD
from tests.conftest import RULE_CASES

AGENTS = ["player_0", "player_1"]


def _pick(mask: np.ndarray, rng: random.Random, take_rate: float = 0.8) -> int:
    legal = [int(a) for a in np.flatnonzero(mask)]
    if actions.TAKE in legal and rng.random() < take_rate:
        return actions.TAKE
    return rng.choice(legal)


def _play_to_end(env, rng: random.Random, take_rate: float = 0.8) -> list[int]:
    """Play the live agents with random legal actions until the game ends (no dead steps)."""
    played = []
    while not any(env.terminations.values()):
        agent = env.agent_selection
        action = _pick(env.observe(agent)["action_mask"], rng, take_rate)
        played.append(action)
        env.step(action)
    return played


def _card(text: str) -> int:
    return parse_card(text)


# ----------------------------------------------------------------------------- PettingZoo checks


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_pettingzoo_api_test(rules):
    api_test(conquian_env.env(rules=rules), num_cycles=1000)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_pettingzoo_seed_test(rules):
    seed_test(functools.partial(conquian_env.env, rules=rules), num_cycles=500)


def test_pettingzoo_render_test(capsys):
    def ansi_ok(text):
        return isinstance(text, str) and "player_0" in text and ("to move:" in text or "game over" in text)

    render_test(conquian_env.env, custom_tests={"ansi": ansi_ok})
    assert "player_0  hand" in capsys.readouterr().out  # "human" printed the table


# ----------------------------------------------------------------------------- registry, spaces


def test_registry_make():
    assert "Conquian-v0" in pettingzoo.aec_registry
    env = pettingzoo.make("aec", "Conquian-v0")
    assert isinstance(env.unwrapped, conquian_env.raw_env)
    env.reset(seed=0)
    assert env.agents == AGENTS
    assert not env.unwrapped.rules.forcing
    forced = pettingzoo.make("aec", "Conquian-v0", forcing=True, render_mode="ansi")
    assert forced.unwrapped.rules.forcing and forced.unwrapped.render_mode == "ansi"
    assert env.unwrapped.rules == STANDARD and forced.unwrapped.rules == FORCING
    # importing again does not register twice or fail
    import importlib

    importlib.reload(conquian_env)
    assert "Conquian-v0" in pettingzoo.aec_registry


def test_the_parallel_form_is_registered_under_the_same_id():
    # before: pettingzoo.make("parallel", "Conquian-v0") was not registered although parallel_env() exists
    assert "Conquian-v0" in pettingzoo.parallel_registry
    env = pettingzoo.make("parallel", "Conquian-v0", forcing=True)
    observations, _ = env.reset(seed=3)
    assert isinstance(env, pettingzoo.ParallelEnv) and set(observations) == set(AGENTS)
    assert env.unwrapped.rules == FORCING
    to_move = next(a for a in AGENTS if observations[a]["action_mask"].any())
    legal = int(np.flatnonzero(observations[to_move]["action_mask"])[0])
    observations, rewards, terminations, truncations, _ = env.step(dict.fromkeys(AGENTS, 0) | {to_move: legal})
    assert set(rewards) == set(AGENTS)


def test_spaces():
    env = conquian_env.env()
    env.reset(seed=1)
    for agent in AGENTS:
        obs_space = env.observation_space(agent)
        assert isinstance(obs_space, spaces.Dict)
        assert set(obs_space.spaces) == {"observation", "action_mask"}
        for key, size in (("observation", OBS_SIZE), ("action_mask", actions.NUM_ACTIONS)):
            box = obs_space[key]
            assert isinstance(box, spaces.Box)
            assert box.shape == (size,) and box.dtype == np.int8
            assert box.low.min() == 0 and box.high.max() == 1
        assert env.action_space(agent) == spaces.Discrete(85)
        obs = env.observe(agent)
        assert obs_space.contains(obs)
        assert obs["observation"].dtype == np.int8 and obs["action_mask"].dtype == np.int8
    assert env.unwrapped.state_space.shape == (STATE_SIZE,)
    with pytest.raises(KeyError, match="unknown agent"):
        env.observation_space("player_2")
    with pytest.raises(KeyError, match="unknown agent"):
        env.action_space("nobody")
    with pytest.raises(KeyError, match="unknown agent"):
        env.observe("player_2")


# ----------------------------------------------------------------------------- observe, masks


def _check_observations(env) -> None:
    game = env.unwrapped.game
    for i, agent in enumerate(AGENTS):
        obs = env.observe(agent)
        assert env.observation_space(agent).contains(obs)
        mask = obs["action_mask"]
        to_move = not game.is_terminal() and game.player == i
        if to_move:
            expected = np.zeros(actions.NUM_ACTIONS, dtype=np.int8)
            expected[game.legal_actions()] = 1
            assert np.array_equal(mask, expected)
            assert env.agent_selection == agent
        else:
            assert not mask.any(), f"{agent} is not to move but has a mask"
        d = decode(obs["observation"])
        assert d["own_hand"] == cards_str(game.hands[i]).split()
        assert d["own_meld"] == cards_str(game.melds[i]).split()
        assert d["opponent_meld"] == cards_str(game.melds[1 - i]).split()


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_observe_both_agents_at_any_time(rules):
    rng = random.Random(5)
    env = conquian_env.env(rules=rules)
    for seed in range(15):
        env.reset(seed=seed)
        _check_observations(env)
        while not any(env.terminations.values()):
            env.step(_pick(env.observe(env.agent_selection)["action_mask"], rng))
            _check_observations(env)


def _final_checks(env, expected_rewards: dict[str, int]) -> None:
    game = env.unwrapped.game
    assert game.is_terminal()
    assert env.terminations == {a: True for a in AGENTS}
    assert env.truncations == {a: False for a in AGENTS}
    assert env.rewards == expected_rewards
    assert env._cumulative_rewards == expected_rewards
    for i, agent in enumerate(AGENTS):
        obs = env.observe(agent)
        assert not obs["action_mask"].any()
        d = decode(obs["observation"])
        assert d["phase"] == "game_over"
        assert d["own_meld"] == cards_str(game.melds[i]).split()
        assert d["opponent_meld"] == cards_str(game.melds[1 - i]).split()
        assert d["own_hand"] == cards_str(game.hands[i]).split()
        assert d["stock_size"] == game.stock_left
        assert obs["observation"].any()
    assert env.unwrapped.legal_actions() == []


def _dead_steps(env, expected_rewards: dict[str, int], expected_infos: dict[str, dict]) -> None:
    """The AEC dead-step protocol: each terminated agent steps None and leaves."""
    seen = []
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        assert terminated and not truncated
        assert reward == expected_rewards[agent]
        assert info == expected_infos[agent]
        assert not obs["action_mask"].any()
        seen.append(agent)
        env.step(None)
    assert sorted(seen) == AGENTS
    assert env.agents == []
    # observe still works after every agent has left, and shows the final table
    game = env.unwrapped.game
    for i, agent in enumerate(AGENTS):
        d = decode(env.observe(agent)["observation"])
        assert d["phase"] == "game_over" and d["own_meld"] == cards_str(game.melds[i]).split()


def test_win_and_draw_rewards_infos_and_final_observation():
    rng = random.Random(1)
    env = conquian_env.env()
    outcomes = set()
    for seed in range(200):
        env.reset(seed=seed)
        take_rate = 0.95 if seed % 2 else 0.2
        _play_to_end(env, rng, take_rate)
        game = env.unwrapped.game
        if game.winner >= 0:
            winner = AGENTS[game.winner]
            rewards = {a: (1 if a == winner else -1) for a in AGENTS}
            infos = {
                a: {"result": "win" if a == winner else "loss", "winner": winner, "moves": game.move_count}
                for a in AGENTS
            }
            assert game.melds[game.winner].bit_count() == 11
            outcome = "win"
        else:
            rewards = {a: 0 for a in AGENTS}
            infos = {a: {"result": "draw", "winner": None, "moves": game.move_count} for a in AGENTS}
            outcome = "draw"
        assert env.infos == infos
        _final_checks(env, rewards)
        if outcome not in outcomes:
            _dead_steps(env, rewards, infos)
        outcomes.add(outcome)
        if outcomes == {"win", "draw"}:
            break
    assert outcomes == {"win", "draw"}


# ----------------------------------------------------------------------------- hidden information


def _replay_observations(env, options: dict, played: list[int], observer: int) -> list:
    env.reset(options=options)
    seen = []
    for action in played:
        seen.append((env.agent_selection, env.observe(AGENTS[observer])))
        env.step(action)
    seen.append((env.agent_selection, env.observe(AGENTS[observer])))
    return seen


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_observation_ignores_hidden_cards(rules):
    """Re-dealing the opponent's hidden cards and the unturned stock changes nothing the player sees."""
    rng = random.Random(17 + RULE_CASES.index(rules))
    env = conquian_env.env(rules=rules)
    compared = 0
    for seed in range(60):
        observer = seed % 2
        opp = 1 - observer
        env.reset(seed=seed)
        game = env.unwrapped.game
        hands0 = [[c for c in range(40) if game.hands[p] >> c & 1] for p in (0, 1)]
        stock0 = list(game.stock)
        # play a random prefix, stopping where the opponent is not in the middle of a meld
        played = []
        cuts = []
        n = rng.randrange(5, 80)
        while not game.is_terminal() and len(played) < n:
            played.append(_pick(env.observe(env.agent_selection)["action_mask"], rng, 0.7))
            env.step(played[-1])
            if not (game.phase == MELD and game.player == opp):
                cuts.append(len(played))
        if not cuts:
            continue
        played = played[: cuts[-1]]
        # replay to the cut to learn what is still hidden from the observer there
        env.reset(options={"hands": hands0, "stock": stock0})
        for a in played:
            env.step(a)
        game = env.unwrapped.game
        hidden_hand = [c for c in hands0[opp] if game.hands[opp] >> c & 1]
        hidden_stock_positions = list(range(game.stock_pos, 20))
        if not hidden_hand or not hidden_stock_positions:
            continue
        pool = hidden_hand + [stock0[i] for i in hidden_stock_positions]
        while set(pool[: len(hidden_hand)]) == set(hidden_hand):
            rng.shuffle(pool)
        new_hands = [h[:] for h in hands0]
        new_hands[opp] = [c for c in hands0[opp] if c not in hidden_hand] + pool[: len(hidden_hand)]
        new_stock = stock0[:]
        for i, card in zip(hidden_stock_positions, pool[len(hidden_hand) :], strict=True):
            new_stock[i] = card
        a_obs = _replay_observations(env, {"hands": hands0, "stock": stock0}, played, observer)
        opp_view_a = env.observe(AGENTS[opp])["observation"]
        b_obs = _replay_observations(env, {"hands": new_hands, "stock": new_stock}, played, observer)
        opp_view_b = env.observe(AGENTS[opp])["observation"]
        assert len(a_obs) == len(b_obs) == len(played) + 1
        for (sel_a, oa), (sel_b, ob) in zip(a_obs, b_obs, strict=True):
            assert sel_a == sel_b
            assert np.array_equal(oa["observation"], ob["observation"])
            assert np.array_equal(oa["action_mask"], ob["action_mask"])
        # the re-deal was real: the opponent's own view differs
        assert not np.array_equal(opp_view_a, opp_view_b)
        compared += 1
    assert compared >= 25


# ----------------------------------------------------------------------------- determinism


def _game_digest(seed: int, forcing: bool = False) -> str:
    env = conquian_env.env(forcing=forcing)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed + 1000)
    h = hashlib.sha256()
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        h.update(agent.encode() + obs["observation"].tobytes() + obs["action_mask"].tobytes())
        h.update(json.dumps([reward, terminated, truncated, info], sort_keys=True).encode())
        if terminated or truncated:
            action = None
        else:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        h.update(str(action).encode())
        env.step(action)
    return h.hexdigest()


def test_same_seed_same_game():
    for seed in range(5):
        assert _game_digest(seed) == _game_digest(seed)
        assert _game_digest(seed, True) == _game_digest(seed, True)
    assert len({_game_digest(s) for s in range(5)}) == 5
    # reset() without a seed continues the seeded stream the same way
    env1, env2 = conquian_env.env(), conquian_env.env()
    env1.reset(seed=3)
    env2.reset(seed=3)
    env1.reset()
    env2.reset()
    assert env1.unwrapped.game.to_dict() == env2.unwrapped.game.to_dict()


_DIGEST_SCRIPT = """
import sys, json
sys.path.insert(0, {tests!r})
import test_env
print(json.dumps([test_env._game_digest(s, f) for s in range(3) for f in (False, True)]))
"""


def test_same_seed_same_game_across_processes():
    here = os.path.dirname(os.path.abspath(__file__))
    script = _DIGEST_SCRIPT.format(tests=here)
    outputs = []
    for hash_seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=True
        )
        outputs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert outputs[0] == outputs[1]
    assert outputs[0] == [_game_digest(s, f) for s in range(3) for f in (False, True)]


# ----------------------------------------------------------------------------- bad input

GOOD_HANDS = [[CARD_NAMES[c] for c in range(0, 10)], [CARD_NAMES[c] for c in range(10, 20)]]
GOOD_STOCK = [CARD_NAMES[c] for c in range(20, 40)]


def test_good_stacked_deal():
    env = conquian_env.env()
    env.reset(options={"hands": GOOD_HANDS, "stock": GOOD_STOCK, "first": 1})
    game = env.unwrapped.game
    assert env.agent_selection == "player_1"
    assert game.face_up == 20 and game.stock_left == 19
    assert cards_str(game.hands[0]).split() == GOOD_HANDS[0]


@pytest.mark.parametrize(
    "hands, stock, message",
    [
        ([["8H"] + GOOD_HANDS[0][1:], GOOD_HANDS[1]], GOOD_STOCK, "unknown card '8H'"),
        ([["XX"] + GOOD_HANDS[0][1:], GOOD_HANDS[1]], GOOD_STOCK, "unknown card 'XX'"),
        ([[99] + GOOD_HANDS[0][1:], GOOD_HANDS[1]], GOOD_STOCK, "unknown card index 99"),
        ([GOOD_HANDS[0], GOOD_HANDS[1][:-1] + ["AC"]], GOOD_STOCK, "AC is dealt twice"),
        ([GOOD_HANDS[0], GOOD_HANDS[1]], GOOD_STOCK[:-1] + ["KC"], "KC is dealt twice"),
        ([GOOD_HANDS[0][:-1], GOOD_HANDS[1]], GOOD_STOCK, "hand 0 has 9 cards"),
        ([GOOD_HANDS[0], GOOD_HANDS[1] + ["KS"]], GOOD_STOCK[:-1], "hand 1 has 11 cards"),
        ([GOOD_HANDS[0], GOOD_HANDS[1]], GOOD_STOCK[:-1], "the stock has 19 cards"),
        ([GOOD_HANDS[0], GOOD_HANDS[1][:5], GOOD_HANDS[1][5:]], GOOD_STOCK, "exactly 2 hands"),
        ([GOOD_HANDS[0]], GOOD_STOCK, "exactly 2 hands"),
        (GOOD_HANDS, None, "needs both 'hands' and 'stock'"),
        (None, GOOD_STOCK, "needs both 'hands' and 'stock'"),
    ],
)
def test_bad_deal_raises(hands, stock, message):
    env = conquian_env.env()
    options = {}
    if hands is not None:
        options["hands"] = hands
    if stock is not None:
        options["stock"] = stock
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        env.reset(options=options)


def test_bad_first_player_raises():
    with pytest.raises(ValueError, match="first must be 0 or 1"):
        conquian_env.env().reset(seed=0, options={"first": 2})


def test_unknown_reset_option_warns():
    env = conquian_env.env()
    with pytest.warns(UserWarning, match="unknown option"):
        env.reset(seed=0, options={"colour": "red"})
    # the key PettingZoo's tests use, with any other value (a nested options dict is a mistake)
    for value in (2, True, "1", {"first": 1}):
        with pytest.warns(UserWarning, match=r"unknown option\(s\) \['options'\]"):
            env.reset(seed=0, options={"options": value})


def _unknown_option_warnings(run) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught if "unknown option" in str(w.message)]


def test_pettingzoo_test_option_does_not_warn():
    """api_test and parallel_api_test pass reset(options={"options": 1}): no warning for it."""
    assert _unknown_option_warnings(lambda: conquian_env.env().reset(seed=0, options={"options": 1})) == []
    assert _unknown_option_warnings(lambda: api_test(conquian_env.env(), num_cycles=50)) == []
    assert _unknown_option_warnings(lambda: parallel_api_test(conquian_env.parallel_env(), num_cycles=50)) == []
    # together with a real option, the real one is used
    env = conquian_env.env()
    assert _unknown_option_warnings(lambda: env.reset(seed=0, options={"options": 1, "first": 1})) == []
    assert env.agent_selection == "player_1"


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_parallel_env_passes_parallel_api_test(rules):
    par = conquian_env.parallel_env(rules=rules)
    assert isinstance(par, pettingzoo.ParallelEnv)
    parallel_api_test(par, num_cycles=1000)


def test_parallel_env_plays_the_same_games_as_the_aec_env():
    """Only the mover's action is played; the other agent's mask is all zero; at the end both
    agents get their result and are terminated, as in the AEC env with the same seed."""
    for seed in range(4):
        par = conquian_env.parallel_env(illegal_action="raise")
        aec = conquian_env.env(illegal_action="raise")
        obs, _ = par.reset(seed=seed)
        aec.reset(seed=seed)
        rng = random.Random(seed)
        while par.agents:
            movers = [a for a in par.agents if obs[a]["action_mask"].any()]
            assert movers == [aec.agent_selection]
            for a in par.agents:
                np.testing.assert_array_equal(obs[a]["observation"], aec.observe(a)["observation"])
            action = _pick(obs[movers[0]]["action_mask"], rng)
            aec.step(action)
            obs, rewards, terms, truncs, _ = par.step({a: action if a == movers[0] else 0 for a in par.agents})
            assert not any(truncs.values())
        assert rewards == aec.rewards and sorted(rewards.values()) in ([-1, 1], [0, 0])
        assert all(terms.values())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"render_mode": "rgb"}, "render_mode must be one of"),
        ({"render_mode": "text"}, "render_mode must be one of"),
        ({"illegal_action": "ignore"}, "illegal_action must be one of"),
        ({"forcing": "yes"}, "forcing must be True or False"),
    ],
)
def test_bad_constructor_options_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        conquian_env.env(**kwargs)
    with pytest.raises(ValueError, match=message):
        pettingzoo.make("aec", "Conquian-v0", **kwargs)


def test_unknown_constructor_keyword_is_a_type_error():
    with pytest.raises(TypeError):
        conquian_env.env(max_cycles=100)


def _snapshot(env) -> tuple:
    return (
        env.unwrapped.game.to_dict(),
        env.agent_selection,
        dict(env.rewards),
        dict(env._cumulative_rewards),
        dict(env.terminations),
        {a: env.observe(a)["observation"].tobytes() + env.observe(a)["action_mask"].tobytes() for a in AGENTS},
    )


def test_illegal_action_raise_mode():
    env = conquian_env.env(illegal_action="raise")
    env.reset(seed=2)
    rng = random.Random(0)
    checked_phases = set()
    while not any(env.terminations.values()):
        game = env.unwrapped.game
        legal = game.legal_actions()
        illegal = [a for a in range(actions.NUM_ACTIONS) if a not in legal]
        bad = rng.choice(illegal)
        before = _snapshot(env)
        with pytest.raises(IllegalActionError) as err:
            env.step(bad)
        assert isinstance(err.value, ValueError)
        text = str(err.value)
        assert f"illegal action {bad}" in text and actions.action_to_str(bad) in text
        assert "legal actions:" in text
        for a in legal:
            assert f"{a} ({actions.action_to_str(a)})" in text
        assert _snapshot(env) == before, "an illegal action changed the game"
        checked_phases.add(game.phase)
        env.step(_pick(env.observe(env.agent_selection)["action_mask"], rng))
    assert {0, 1, 2} <= checked_phases


@pytest.mark.parametrize("phase_moves", [0, 1, 3])
def test_illegal_action_penalize_mode(phase_moves):
    env = conquian_env.env()  # "penalize" is the default
    env.reset(options=_fix_deal(["5S", "6S", "JH", "JD", "AC", "2D", "3H", "4C", "KC", "QD"]))
    for a in [actions.TAKE, _card("5S"), _card("6S")][:phase_moves]:
        env.step(a)
    offender = env.agent_selection
    other = [a for a in AGENTS if a != offender][0]
    game = env.unwrapped.game
    bad = actions.DISCARD_BASE + 39 if phase_moves else actions.FINISH
    assert not game.is_legal(bad)
    with pytest.warns(UserWarning, match=f"{offender}: illegal action {bad}"):
        env.step(bad)
    assert env.terminations == {a: True for a in AGENTS}
    assert env.rewards == {offender: -1, other: 1}
    assert env.infos[offender]["illegal_action"] is True and env.infos[other]["illegal_action"] is False
    assert env.infos[offender]["result"] == "loss" and env.infos[other]["result"] == "win"
    _final_checks(env, {offender: -1, other: 1})
    assert game.returns()[AGENTS.index(offender)] == -1
    _dead_steps(env, {offender: -1, other: 1}, dict(env.infos))


def _fix_deal(hand0: list[str]) -> dict:
    """A full deal with player 0's hand as given and 7S, JS on top of the stock."""
    rest = [c for c in CARD_NAMES if c not in hand0 and c not in ("7S", "JS")]
    return {"hands": [hand0, rest[:10]], "stock": ["7S", "JS"] + rest[10:28]}


@pytest.mark.parametrize("mode", ["penalize", "raise"])
@pytest.mark.parametrize("bad", [1.5, "take", None, 85, -1, True, np.array([1, 2]), np.float64(80.0), [80]])
def test_non_action_values_raise(mode, bad):
    env = conquian_env.env(illegal_action=mode)
    env.reset(seed=0)
    before = _snapshot(env)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no penalty warning: these are not actions at all
        with pytest.raises(ValueError, match="action"):
            env.step(bad)
    assert _snapshot(env) == before


def test_numpy_integer_actions_work():
    env = conquian_env.env()
    env.reset(seed=0)
    env.step(np.int64(actions.REFUSE))
    env.step(np.array(actions.REFUSE))
    assert env.unwrapped.game.move_count == 2


def test_stepping_after_the_end():
    env = conquian_env.env()
    env.reset(seed=0)
    _play_to_end(env, random.Random(0), 0.9)
    final = env.unwrapped.game.to_dict()
    # a real action for a terminated agent: pettingzoo's dead-step check raises ValueError
    with pytest.raises(ValueError, match="only valid action is None"):
        env.step(actions.REFUSE)
    env.step(None)
    assert len(env.agents) == 1
    env.step(None)
    assert env.agents == []
    # with no agents left the OrderEnforcingWrapper only logs a warning and does nothing
    EnvLogger.flush()
    env.step(actions.REFUSE)
    env.step(None)
    assert any("step() called after all agents are terminated" in str(m) for m in EnvLogger.mqueue)
    EnvLogger.flush()
    assert env.unwrapped.game.to_dict() == final
    # a new game starts cleanly
    env.reset(seed=1)
    assert env.agents == AGENTS and not any(env.terminations.values())


def test_calls_before_reset_fail():
    env = conquian_env.env()
    with pytest.raises(AssertionError, match="reset"):
        env.step(actions.REFUSE)
    with pytest.raises(AssertionError, match="reset"):
        env.observe("player_0")
    raw = conquian_env.raw_env()
    with pytest.raises(RuntimeError, match="reset"):
        raw.observe("player_0")


# ----------------------------------------------------------------------------- render and state


def _melded_table(render_mode="ansi"):
    """player_0 melds run 5S 6S 7S, then set JD JH JS; player_1 is offered 2D."""
    env = conquian_env.env(render_mode=render_mode)
    hand0 = ["5S", "6S", "JH", "JD", "AC", "2D", "3H", "4C", "KC", "QD"]
    env.reset(options=_fix_deal(hand0))
    script = [
        actions.TAKE,  # player_0 takes the turned 7S
        _card("5S"),
        _card("6S"),
        actions.FINISH,
        actions.DISCARD_BASE + _card("AC"),
        actions.REFUSE,  # player_1 refuses AC (dead), turns JS
        actions.REFUSE,  # player_1 refuses JS: offered to player_0
        actions.TAKE,
        _card("JH"),
        _card("JD"),
        actions.FINISH,
        actions.DISCARD_BASE + _card("2D"),
    ]
    for a in script:
        env.step(a)
    return env


def test_render_ansi_shows_the_table():
    env = _melded_table()
    text = env.render()
    game = env.unwrapped.game
    assert isinstance(text, str)
    for p, agent in enumerate(AGENTS):
        assert f"{agent}  hand ({game.hands[p].bit_count():2d}): {cards_str(game.hands[p])}" in text
    assert "[5S 6S 7S]" in text and "[JD JH JS]" in text  # the meld split into a run and a set
    assert "face-up: 2D (discarded by player_0)" in text
    assert "stock: 18" in text
    assert "dead: AC" in text
    assert "to move: player_1 (offer)" in text


def test_render_human_prints_and_none_warns(capsys):
    env = _melded_table("human")
    capsys.readouterr()
    assert env.render() is None
    assert "[5S 6S 7S]" in capsys.readouterr().out
    quiet = conquian_env.env()
    quiet.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert quiet.render() is None


def test_state_and_decode_state():
    env = _melded_table()
    game = env.unwrapped.game
    state = env.state()
    assert state.shape == (STATE_SIZE,) and state.dtype == np.int8
    assert env.unwrapped.state_space.contains(state)
    d = decode_state(state)
    assert d["hand_0"] == cards_str(game.hands[0]).split()
    assert d["hand_1"] == cards_str(game.hands[1]).split()
    assert sorted(d["meld_0"]) == sorted(["5S", "6S", "7S", "JD", "JH", "JS"])
    assert d["meld_0"] == cards_str(game.melds[0]).split()
    assert d["stock"] == [CARD_NAMES[c] for c in game.stock[game.stock_pos :]]
    assert len(d["stock"]) == 18
    assert d["face_up"] == ["2D"] and d["dead"] == ["AC"]
    assert d["player_to_move"] == [0, 1]
    # state() changes as the game goes on and stays in its space
    rng = random.Random(0)
    while not any(env.terminations.values()):
        env.step(_pick(env.observe(env.agent_selection)["action_mask"], rng))
        s = env.state()
        assert env.unwrapped.state_space.contains(s)
        d = decode_state(s)
        assert d["stock"] == [CARD_NAMES[c] for c in game.stock[game.stock_pos :]]
        assert d["hand_0"] == cards_str(game.hands[0]).split()


@pytest.mark.parametrize("mode", ["penalize", "raise"])
def test_a_finished_game_cannot_be_rewritten(mode):
    # before: after the dead steps, a further step() was judged illegal and in penalize mode
    # forfeited the finished game: a draw became a win
    import warnings

    for seed in range(60):
        env = conquian_env.raw_env(illegal_action=mode)
        env.reset(seed=seed)
        game = env.unwrapped.game
        while not game.is_terminal():
            env.step(env.legal_actions()[-1])
        if game.winner < 0:
            break
    assert game.winner < 0, "found a drawn game"
    env.step(None)
    env.step(None)
    assert env.agents == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no illegal-action warning either
        for action in (81, 0, 5):
            with pytest.raises(RuntimeError, match="game is over"):
                env.step(action)
    assert game.winner < 0 and game.returns() == (0, 0) and game.is_terminal()
    with pytest.raises(RuntimeError, match="already over"):
        game.forfeit(0)


def test_numpy_and_float_values_at_the_entry_points():
    # before: first=np.int64(1) was kept as a numpy int, first=1.0 left a broken game,
    # forcing="no" turned the variant on, and apply() took 81.0 or np.int64 as they came
    from conquian_env.game import IllegalActionError, new_game

    env = conquian_env.raw_env()
    env.reset(seed=4, options={"first": np.int64(1)})
    game = env.unwrapped.game
    assert type(game.player) is int and game.player == 1
    for bad in (1.0, True, "1", 2, np.float64(0)):
        with pytest.raises(ValueError, match="first must be 0 or 1"):
            env.reset(seed=4, options={"first": bad})
        with pytest.raises(ValueError, match="first must be 0 or 1"):
            new_game(seed=4, first=bad)
    with pytest.raises(ValueError, match="forcing"):
        new_game(seed=4, forcing="no")
    state = new_game(seed=4)
    for bad in (81.0, True, np.bool_(True), "81"):
        with pytest.raises(IllegalActionError, match="integer id"):
            state.apply(bad)
    assert state.move_count == 0
    state.apply(np.int64(81))  # refuse, as a numpy integer
    assert state.move_count == 1 and all(type(m) is int for m in (*state.refusals, *state.hands, state.dead))
    state.apply(np.int32(state.legal_actions()[-1]))
    assert all(type(m) is int for m in (*state.melds, *state.hands, state.chosen, *state.discards))


def test_malformed_deal_structures_and_failed_resets():
    # before: bare TypeErrors, a failed reset re-seeded the generator, and
    # {"hands": None, "stock": None} gave an unseeded deal instead of the seeded one
    env = conquian_env.raw_env()
    hand = [f"{r}C" for r in "A234567JQK"]
    stock = [f"{r}{s}" for s in "DHS" for r in "A234567JQK"][10:]
    for options in (
        {"hands": [hand, None], "stock": stock},
        {"hands": 5, "stock": stock},
        {"hands": [hand, hand[:5]], "stock": 7},
        "x",
        ["hands"],
    ):
        with pytest.raises(ValueError):
            env.reset(seed=1, options=options)
    reference = conquian_env.raw_env()
    reference.reset(seed=11)
    env.reset(seed=11)
    with pytest.raises(ValueError):
        env.reset(options={"first": 7})  # fails: must not consume the generator
    with pytest.raises(ValueError):
        env.reset(seed=99, options={"first": 7})  # fails: must not re-seed it either
    env.reset()
    reference.reset()
    assert env.unwrapped.game.hands == reference.unwrapped.game.hands
    seeded = conquian_env.raw_env()
    seeded.reset(seed=5, options={"hands": None, "stock": None})
    plain = conquian_env.raw_env()
    plain.reset(seed=5)
    assert seeded.unwrapped.game.hands == plain.unwrapped.game.hands
    assert seeded.unwrapped.game.stock == plain.unwrapped.game.stock


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copies_of_an_env_carry_the_game(how):
    # before: EzPickle rebuilt a fresh env that had never been reset
    import copy
    import pickle

    env = conquian_env.env()
    env.reset(seed=3)
    for _ in range(9):
        env.step(env.unwrapped.legal_actions()[0])
    clone = copy.deepcopy(env) if how == "deepcopy" else pickle.loads(pickle.dumps(env))
    assert clone.agent_selection == env.agent_selection
    assert clone.unwrapped.game is not env.unwrapped.game
    for a in env.agents:
        assert np.array_equal(clone.observe(a)["observation"], env.observe(a)["observation"])
    # both continue identically, independently of each other
    for _ in range(30):
        if env.unwrapped.game.is_terminal():
            break
        action = env.unwrapped.legal_actions()[-1]
        env.step(action)
        clone.step(action)
        assert clone.unwrapped.game.to_dict() == env.unwrapped.game.to_dict()
    env.reset()
    clone.reset()  # the generator was copied too: the next deal is the same
    assert clone.unwrapped.game.to_dict() == env.unwrapped.game.to_dict()


def test_penalize_warnings_point_at_the_caller_and_do_not_pile_up():
    # before: the warning pointed at PettingZoo's OrderEnforcingWrapper and every distinct
    # message stayed in that module's __warningregistry__
    import pettingzoo.utils.wrappers.order_enforcing as order_enforcing

    from conquian_env.game import IllegalActionWarning

    registry = getattr(order_enforcing, "__warningregistry__", {})
    before = len(registry)
    for seed in range(5):
        env = conquian_env.env()
        env.reset(seed=seed)
        illegal = int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"] == 0)[seed])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            env.step(illegal)
        assert len(caught) == 1 and caught[0].category is IllegalActionWarning
        assert caught[0].filename == __file__, caught[0].filename
    assert len(getattr(order_enforcing, "__warningregistry__", {})) <= before + 1
    assert not any("illegal action" in str(k) for k in globals().get("__warningregistry__", {}))


def test_the_environment_checkers_print_no_illegal_action_warning():
    # before: Gymnasium's check_env printed four IllegalActionWarnings (it steps random unmasked
    # actions on purpose), Stable-Baselines3's two; a user's own illegal step still warns
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    from conquian_env.game import IllegalActionWarning

    checkers = [check_env]
    try:
        from stable_baselines3.common.env_checker import check_env as sb3_check_env

        checkers.append(sb3_check_env)
    except ImportError:  # the train extra: Gymnasium's checker alone
        pass
    for checker in checkers:
        env = gymnasium.make("conquian_env/Conquian-v0", opponent="greedy")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            checker(env.unwrapped)
        assert not [w for w in caught if w.category is IllegalActionWarning], checker
    env = gymnasium.make("conquian_env/Conquian-v0", opponent="greedy")
    obs, _ = env.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env.step(int(np.flatnonzero(~env.unwrapped.action_masks())[0]))  # the passive checker wraps this first step
    assert [w.category for w in caught if w.category is IllegalActionWarning] == [IllegalActionWarning]


def test_numeric_infos_have_the_same_keys_and_int_values_on_every_step():
    # Tianshou stacks infos into arrays: strings and None on some steps only break it
    with pytest.raises(ValueError, match="numeric_infos"):
        conquian_env.env(numeric_infos="yes")
    results = set()
    for seed in range(8):
        env = conquian_env.env(numeric_infos=True)
        env.reset(seed=seed)
        keys = None
        for _agent in env.agent_iter():
            obs, reward, termination, truncation, info = env.last()
            assert all(type(v) is int for v in info.values()), info
            keys = keys or set(info)
            assert set(info) == keys == {"game_over", "result", "winner", "moves", "illegal_action"}
            if termination:
                assert info["game_over"] == 1 and info["result"] == reward
                results.add(info["result"])
                env.step(None)
            else:
                assert info["game_over"] == 0 and info["winner"] == -1
                env.step(int(np.flatnonzero(obs["action_mask"])[-(seed % 2)]))  # first or last legal
    assert 0 in results and (1 in results or -1 in results)
    # penalize mode marks the offender
    env = conquian_env.env(numeric_infos=True)
    env.reset(seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(84)
    assert env.infos["player_0"]["illegal_action"] == 1 and env.infos["player_1"]["illegal_action"] == 0


def test_importing_the_environment_loads_none_of_the_bots():
    # imports point one way: conquian_env (rules, env) <- agents (bots) <- conquian_arena
    # (games, tournaments, people) <- train.py / evaluate.py; not even lazily the other way
    env_modules = ["conquian_env", "conquian_env.wrappers", "conquian_env.transitions", "conquian_env.plugins"]
    bot_modules = ["agents", "agents.registry", "agents.greedy.greedy", "agents.search.ismcts", "agents.search.rollout"]
    bot_modules += ["agents.networks.ppo"]
    try:
        import numba  # noqa: F401 - the batched engine's modules need it

        env_modules += ["conquian_env.vector", "conquian_env.vector_env"]
        bot_modules += ["agents.batched"]
    except ImportError:
        pass
    code = (
        f"import sys, {', '.join(env_modules)}\n"
        "def ours(*top): return sorted(m for m in sys.modules if m.split('.')[0] in top)\n"
        "print(ours('agents', 'conquian_arena', 'conquian_train', 'train', 'evaluate'))\n"
        f"import {', '.join(bot_modules)}\n"
        "print(ours('conquian_arena', 'conquian_train', 'train', 'evaluate', 'torch'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]", out[0]
    assert out[1] == "[]", out[1]


def test_no_module_of_the_environment_names_an_upper_layer():
    # lazy imports hide a cycle, they do not remove it: no import of agents or
    # conquian_arena anywhere in conquian_env's code, not even inside a function
    import ast

    root = Path(conquian_env.__file__).resolve().parent
    upper = {"agents", "conquian_arena", "conquian_train", "train", "evaluate"}
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            found += [f"{path.relative_to(root)}:{node.lineno} {n}" for n in names if n.split(".")[0] in upper]
    assert found == []
    # the bots import nothing of the runner or the training package, the runner nothing of training
    # (read from the syntax tree: a docstring line that starts with "from" is no import)
    for package, above in (("agents", ("conquian_arena", "conquian_train")), ("conquian_arena", ("conquian_train",))):
        for path in sorted((root.parent / package).rglob("*.py")):  # sub-packages too
            imported = []
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    imported += [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    imported.append(node.module or "")
            assert not any(n.split(".")[0] in above for n in imported), f"{package}/{path.name}: {imported}"


def test_the_environment_defines_no_bot_network_or_training_config():
    # the ground floor holds rules, observations, engines, envs and adapters: a bot (something with
    # the Agent interface's act, or named as a bot), a network or a training config lives above it
    import ast
    import re

    root = Path(conquian_env.__file__).resolve().parent
    named = re.compile(r"[Gg]reedy|(^|_)ppo(_|$)|PPO|RLModule|_bot$|Bot$|Agent$")
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and named.search(node.name):
                found.append(f"{path.relative_to(root)}: {node.name}")
            if isinstance(node, ast.ClassDef):
                for f in node.body:  # agents.base.Agent's one method: act(observation, action_mask, view)
                    if isinstance(f, ast.FunctionDef) and {"action_mask", "view"} <= {a.arg for a in f.args.args}:
                        found.append(f"{path.relative_to(root)}: {node.name}.{f.name}")
    assert found == [], found
    # nor any module named after one
    assert [p.name for p in root.rglob("*.py") if named.search(p.stem) or re.search("greedy|weights", p.stem)] == []


def test_spec_strings_are_resolved_by_the_installed_bots(monkeypatch):
    # dependency inversion: the environment looks the resolver up by entry point
    from conquian_env import plugins
    from conquian_env.wrappers import SingleAgentEnv

    try:
        env = SingleAgentEnv(opponent="greedy")
    except ValueError as err:
        pytest.skip(f"the project is not installed: {err}")
    assert type(env.opponent).__name__ == "GreedyAgent"
    env = gymnasium.make("conquian_env/Conquian-v0", opponent="random")
    env.reset(seed=0)
    try:
        from conquian_env.vector_env import ConquianVectorEnv
    except ImportError:  # no numba: no batched engine
        pass
    else:
        venv = ConquianVectorEnv(2, opponent="greedy", observation="meld", seed=0)
        assert type(venv.core.opponent).__name__ == "BatchGreedy" and venv.reset()[0].shape[0] == 2
    with pytest.raises(ValueError, match="unknown bot 'nosuchbot'"):  # the resolver's own error
        SingleAgentEnv(opponent="nosuchbot")
    monkeypatch.setattr(plugins, "entry_points", lambda **kw: [])  # no bots installed
    with pytest.raises(ValueError, match="'greedy' needs a bot resolver.*no installed package provides one"):
        SingleAgentEnv(opponent="greedy")
    with pytest.raises(ValueError, match="needs a batched bot resolver"):
        plugins.make_batch_opponent("greedy")
    with pytest.raises(ValueError, match="the observation 'meld' needs an encoder"):
        plugins.observation_encoder("meld")
    SingleAgentEnv(opponent=lambda obs, mask, view: int(mask.nonzero()[0][0]))  # objects need no resolver


def test_one_judgement_of_an_answer_for_the_env_the_wrapper_and_the_game_loop():
    # GameState.check_action judges every answer: not an id (81.7, True) is a ValueError
    # everywhere, a legal-looking id that is not legal here an IllegalActionError
    from agents.base import Agent
    from conquian_arena.match import deal_for_seed, play_game
    from conquian_env.wrappers import SingleAgentEnv

    game = conquian_env.new_game(seed=3)
    assert game.check_action(np.int64(81)) == 81 and type(game.check_action(np.int64(81))) is int
    for bad in (81.7, True, -1, 85, "81"):
        with pytest.raises(ValueError) as err:
            game.check_action(bad)
        assert not isinstance(err.value, IllegalActionError)
    with pytest.raises(IllegalActionError, match="illegal action 82"):
        game.check_action(82)
    env = conquian_env.env(illegal_action="raise")
    env.reset(seed=3)
    with pytest.raises(ValueError, match="integer id"):
        env.step(81.7)
    with pytest.raises(IllegalActionError, match="illegal action 82"):
        env.step(82)
    single = SingleAgentEnv(opponent=lambda obs, mask, view: int(mask.nonzero()[0][0]), seat=0, illegal_action="raise")
    single.reset(seed=3)
    with pytest.raises(ValueError, match="integer id"):
        single.step(81.7)

    class Answer(Agent):
        def __init__(self, answer):
            self.answer = answer

        def act(self, observation, action_mask, view):
            return self.answer

    hands, stock = deal_for_seed(3)
    for answer, message in ((81.7, "integer id"), (82, "illegal action 82")):
        record = play_game([Answer(answer), Answer(81)], hands=hands, stock=stock)
        assert record.failure["kind"] == "illegal" and message in record.failure["message"]
        assert record.winner == 1 and record.moves == 0


# ----------------------------------------------------------------------------- render modes on a plain install


def _core_closure() -> set[str]:
    """The distributions a plain ``pip install conquian-env`` brings: the dependencies of this
    checkout's pyproject.toml and theirs (as installed here), extras left out."""
    import importlib.metadata as md
    import re

    tomllib = pytest.importorskip("tomllib", reason="reads pyproject.toml with tomllib (Python 3.11+)")

    def name(req: str) -> str:
        return re.split(r"[\s<>=!~;\[(]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")

    pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    todo = [name(r) for r in pyproject["project"]["dependencies"]]
    seen: set[str] = set()
    while todo:
        dist = todo.pop()
        if dist in seen:
            continue
        seen.add(dist)
        try:
            requires = md.requires(dist) or []
        except md.PackageNotFoundError:
            continue
        todo += [name(r) for r in requires if "extra ==" not in r and "extra==" not in r]
    return seen


@pytest.mark.parametrize("mode", conquian_env.env().metadata["render_modes"])
def test_every_declared_render_mode_needs_only_the_plain_install(mode):
    # before: "rgb_array" was declared but drew with Pillow, an extra, so PettingZoo's
    # render_test failed on a plain pip install conquian-env
    import importlib.metadata as md

    code = (
        "import sys, conquian_env\n"
        f"e = conquian_env.env(render_mode={mode!r}); e.reset(seed=0); e.render()\n"
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    root = Path(__file__).parent.parent
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    owners = md.packages_distributions()
    own = {"conquian_env", "agents", "conquian_arena"}
    third_party = {
        dist.lower().replace("_", "-")
        for module in done.stdout.split()
        if module not in sys.stdlib_module_names and module not in own and not module.startswith("_")
        for dist in owners.get(module, [])
    }
    missing = sorted(third_party - _core_closure())
    assert not missing, f"render_mode={mode!r} imports {missing}, which a plain install does not bring"


# player 0 goes out on the first offer: KH (top of the stock) melds with all ten of their cards
_GOING_OUT_HANDS = [
    ["AD", "AH", "AS", "JH", "QH", "5S", "6S", "7S", "JS", "QS"],
    ["2C", "3C", "KC", "2D", "5D", "QD", "KD", "2H", "3S", "KS"],
]
_GOING_OUT_STOCK = "KH AC 4C 5C 6C 7C JC QC 3D 4D 6D 7D JD 3H 4H 5H 6H 7H 2S 4S".split()


def test_single_agent_reset_never_returns_a_game_the_opponent_already_won():
    from conquian_env.wrappers import SingleAgentEnv

    env = SingleAgentEnv(opponent="greedy", seat=1)
    # issue 15: seed 54437 dealt a game greedy won on its first offer, handed back as live
    obs, info = env.reset(seed=54437)
    assert info["unplayed_results"] == ["loss"] and "result" not in info
    assert not env.game.is_terminal() and env.game.player == 1 and env.action_masks().any()
    env.step(int(np.flatnonzero(env.action_masks())[0]))  # a real episode goes on
    # a stacked deal that goes out at once is dealt anew too, with its result reported
    obs, info = env.reset(seed=3, options={"hands": _GOING_OUT_HANDS, "stock": _GOING_OUT_STOCK})
    assert info["unplayed_results"] == ["loss"] and env.action_masks().any()
    obs, info = env.reset(seed=3)
    assert "unplayed_results" not in info
    # learner first (seat 0): the stacked deal is played as given
    first = SingleAgentEnv(opponent="greedy", seat=0)
    obs, info = first.reset(options={"hands": _GOING_OUT_HANDS, "stock": _GOING_OUT_STOCK})
    assert (
        "unplayed_results" not in info
        and first.game.hands[0] == conquian_env.new_game(hands=_GOING_OUT_HANDS, stock=_GOING_OUT_STOCK).hands[0]
    )
    with pytest.raises(ValueError, match="dealt twice"):
        first.reset(options={"hands": [_GOING_OUT_HANDS[0]] * 2, "stock": _GOING_OUT_STOCK})
    with pytest.warns(UserWarning, match="ignores unknown option"):
        first.reset(options={"first": 1})
