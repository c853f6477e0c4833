"""Per-seat transitions across multi-decision turns (conquian_env.transitions)."""

from __future__ import annotations

import numpy as np
import pytest

import conquian_env
from conquian_env.transitions import Transition, TransitionRecorder


def _play(seed: int, forcing: bool = False):
    env = conquian_env.env(forcing=forcing)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    rec = TransitionRecorder()
    out: dict[str, list[Transition]] = {a: [] for a in env.possible_agents}
    decisions = {a: [] for a in env.possible_agents}
    finals = {}
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        out[agent] += rec.observe(agent, obs, reward, termination or truncation)
        if termination or truncation:
            finals[agent] = reward
            action = None
        else:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            decisions[agent].append((obs["observation"].copy(), action))
        rec.act(agent, obs, action)
        env.step(action)
    return out, decisions, finals


@pytest.mark.parametrize("seed", range(12))
def test_one_transition_per_decision_with_the_result_on_each_seats_last(seed):
    out, decisions, finals = _play(seed, forcing=seed % 3 == 0)
    assert sum(finals.values()) == 0 and set(finals.values()) <= {-1, 0, 1}
    for agent, ts in out.items():
        assert len(ts) == len(decisions[agent]) > 0
        for t, (obs, action) in zip(ts, decisions[agent], strict=True):
            assert np.array_equal(t.obs, obs) and t.action == action and t.mask[action] == 1
        # a seat's next observation is its own next decision's observation, not the opponent's
        for a, b in zip(ts, ts[1:], strict=False):
            assert np.array_equal(a.next_obs, b.obs) and not a.done and a.reward == 0
        assert ts[-1].done and ts[-1].reward == finals[agent]
        assert not ts[-1].next_mask.any(), "the game is over in the last next observation"


def test_multi_decision_turns_are_kept_with_their_player():
    from conquian_env.observation import decode

    takes = 0
    for seed in range(6):
        out, _, _ = _play(seed)
        for ts in out.values():
            for t in ts:
                if t.action == 80 and not t.done:  # a take: the same seat melds next
                    assert decode(t.next_obs)["phase"] == "my_meld"
                    takes += 1
    assert takes > 0


def test_reward_before_any_decision_is_an_error():
    rec = TransitionRecorder()
    with pytest.raises(ValueError, match="before making any decision"):
        rec.observe("player_0", {"observation": np.zeros(456), "action_mask": np.zeros(85)}, 1.0, True)
