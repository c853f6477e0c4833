"""The greedy and ISMCTS bots: legality, constructed positions, determinism, no peeking, strength."""

from __future__ import annotations

import random

import numpy as np
import pytest

from agents import SpecError, make_agent
from agents.base import RandomAgent
from agents.greedy.greedy import GreedyAgent, card_quality, choose_discard, plan_take, take_margin
from agents.search.ismcts import ISMCTSAgent
from conquian_arena.match import deal_for_seed, play_game
from conquian_env.actions import DISCARD_BASE, REFUSE, TAKE
from conquian_env.cards import FULL_MASK, mask_of, parse_card
from conquian_env.game import DISCARD, new_game
from conquian_env.observation import action_mask, encode
from conquian_env.view import PlayerView
from tests.conftest import (
    RULE_CASES,
    SealedView,
    act,
    duplicate,
    mid_game_state,
    permute_hidden,
    stacked_deal,
    stats_under_permutations,
)


def _results(records):
    wins = sum(r.winner == seat for seat, r in records)
    losses = sum(r.winner == 1 - seat for seat, r in records)
    return wins, losses


# ------------------------------------------------------------------ legality


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_greedy_never_plays_an_illegal_action(rules):
    records = duplicate(GreedyAgent(), RandomAgent(seed=3), deals=60, rules=rules)
    records += duplicate(GreedyAgent(), GreedyAgent(), deals=20, rules=rules, offset=500)
    assert all(r.failure is None for _, r in records), [r.failure for _, r in records if r.failure]
    assert all(r.replay()[-1].is_terminal() for _, r in records)


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_ismcts_never_plays_an_illegal_action(rules):
    bot = ISMCTSAgent(iterations=15, seed=1)
    records = duplicate(bot, RandomAgent(seed=4), deals=4, rules=rules)
    records += duplicate(bot, GreedyAgent(), deals=4, rules=rules, offset=100)
    other = ISMCTSAgent(iterations=15, c=2.0, infer=False, seed=2)
    records += duplicate(other, RandomAgent(seed=5), deals=3, rules=rules, offset=200)
    assert all(r.failure is None for _, r in records), [r.failure for _, r in records if r.failure]


@pytest.mark.slow
@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_bots_never_play_an_illegal_action_long(rules):
    records = duplicate(GreedyAgent(), RandomAgent(seed=5), deals=500, rules=rules, offset=1000)
    records += duplicate(ISMCTSAgent(iterations=40, seed=2), RandomAgent(seed=6), deals=30, rules=rules)
    records += duplicate(ISMCTSAgent(iterations=40, infer=False, seed=2), GreedyAgent(), deals=15, rules=rules)
    assert all(r.failure is None for _, r in records), [r.failure for _, r in records if r.failure]


def test_bots_are_built_from_specs():
    assert isinstance(make_agent("greedy"), GreedyAgent)
    bot = make_agent("ismcts-py:iterations=30,c=0.5", seed=4)
    assert isinstance(bot, ISMCTSAgent)
    assert (bot.iterations, bot.c, bot.seed) == (30, 0.5, 4)
    with pytest.raises(ValueError, match="iterations"):
        ISMCTSAgent(iterations=0)


# ------------------------------------------------------------------ greedy, constructed positions


def _play_own_turn(bot, state):
    """Let ``bot`` (player 0) move until the opponent is to move or the game ends."""
    while not state.is_terminal() and state.player == 0:
        action = act(bot, state)
        assert state.is_legal(action)
        state.apply(action)


def test_greedy_goes_out_when_it_can():
    # A-5 of clubs, three 7s and J-Q of clubs: the turned KC makes all eleven.
    hands, stock = stacked_deal("AC 2C 3C 4C 5C 7D 7H 7S JC QC", top="KC")
    state = new_game(hands=hands, stock=stock)
    bot = GreedyAgent()
    bot.reset(0)
    assert act(bot, state) == TAKE
    _play_own_turn(bot, state)
    assert state.winner == 0 and state.hands[0] == 0


def test_greedy_goes_out_through_a_rearrangement():
    # Melded 6S 7S JS and A-4 of clubs, holding JH JD 5C: the 5S goes out as
    # 5S-7S, JS JH JD and A-5 of clubs (the JS moves from the run into a set).
    hand, meld = mask_of("JH JD 5C"), mask_of("6S 7S JS AC 2C 3C 4C")
    live = FULL_MASK & ~(hand | meld | mask_of("5S"))
    assert plan_take(hand, meld, parse_card("5S"), 0, live, 0, 10) == (hand, -1, float("inf"))
    # the same position in a game (test-only surgery on a stacked deal)
    hands, stock = stacked_deal("JH JD 5C 6S 7S JS AC 2C 3C 4C", top="5S")
    state = new_game(hands=hands, stock=stock)
    state.hands[0], state.melds[0], state._mask = hand, meld, -1
    bot = GreedyAgent()
    bot.reset(0)
    _play_own_turn(bot, state)
    assert state.winner == 0


def test_greedy_discards_the_dead_card_first():
    # Every partner of KH is gone (dead, or in the opponent's meld); the other cards pair up.
    hand = mask_of("AS 2S 5C 5D JC QC KH")
    meld = mask_of("7H 7D 7S")
    opp_meld = mask_of("JS QS KS")
    dead = mask_of("KC KD QH JH")
    live = FULL_MASK & ~(hand | meld | opp_meld | dead)
    assert card_quality(parse_card("KH"), hand, meld, live) == 0.0
    for c in ("AS", "2S", "5C", "5D", "JC", "QC"):
        assert card_quality(parse_card(c), hand, meld, live) > 0.0
    assert choose_discard(hand, meld, live, opp_meld, 7)[0] == parse_card("KH")


def test_greedy_does_not_feed_the_opponents_meld():
    # QD and KH are both lone cards with live partners, but KH fits the opponent's K set.
    hand = mask_of("AS 2S 3S 5C 5D QD KH")
    meld = mask_of("7H 7D 7S")
    opp_meld = mask_of("KC KD KS")
    live = FULL_MASK & ~(hand | meld | opp_meld)
    assert choose_discard(hand, meld, live, opp_meld, 7)[0] == parse_card("QD")


def test_greedy_discards_the_unpaired_card_in_play():
    # After taking the turned 5H with 5C 5D the hand is a run, two pairs and a lone KH.
    hands, stock = stacked_deal("5C 5D AS 2S 3S JC QC JD QD KH", top="5H")
    state = new_game(hands=hands, stock=stock)
    bot = GreedyAgent()
    bot.reset(0)
    assert act(bot, state) == TAKE
    state.apply(TAKE)
    while state.phase != DISCARD:
        action = act(bot, state)
        assert state.is_legal(action)
        state.apply(action)
    assert state.melds[0] == mask_of("5C 5D 5H")  # lays the fewest cards
    assert act(bot, state) == DISCARD_BASE + parse_card("KH")


def test_greedy_refuses_a_take_that_breaks_a_ready_hand():
    # Melded 3S-7S and J-K of hearts, holding 5C 5D: ready, the 5H wins.  The AS would extend
    # the run but force a five out of the hand, leaving nothing to win with: refuse it.
    hand, meld = mask_of("5C 5D"), mask_of("3S 4S 5S 6S 7S JH QH KH")
    live = FULL_MASK & ~(hand | meld | mask_of("2S"))
    margin, _ = take_margin(hand, meld, parse_card("2S"), live, 0, 10, False)
    assert margin < 0
    margin, plan = take_margin(hand, meld, parse_card("5H"), live & ~mask_of("5H"), 0, 10, False)
    assert margin >= 0 and plan[1] == -1


# ------------------------------------------------------------------ ISMCTS determinism and no peeking


@pytest.mark.parametrize("seed,moves", [(11, 0), (12, 8), (13, 20), (14, 30)])
def test_ismcts_decisions_ignore_the_hidden_cards(seed, moves):
    state = mid_game_state(seed, moves)
    assert state is not None
    rng = random.Random(seed)
    outcomes = []
    for trial in range(4):
        variant = state if trial == 0 else permute_hidden(state, rng)
        if trial:
            assert variant.hands[1 - state.player] != state.hands[1 - state.player]
        bot = ISMCTSAgent(iterations=60, seed=5)
        bot.reset(state.player, seed=99)
        action = act(bot, variant)
        outcomes.append((action, bot.last_iterations, bot.last_stats))
    assert outcomes[0][1] == 60
    assert all(o == outcomes[0] for o in outcomes), outcomes


class _PeekingISMCTS(ISMCTSAgent):
    """A cheat for the control test below: it searches the real deal behind the view."""

    def _determinize(self, view, evidence, rng):
        return view._state.clone()


def test_the_permutation_check_catches_a_peeking_bot():
    stats = stats_under_permutations(lambda: _PeekingISMCTS(iterations=60, seed=5), mid_game_state(13, 20), seed=13)
    assert any(s != stats[0] for s in stats[1:])


def test_ismcts_is_deterministic_under_a_seed():
    hands, stock = deal_for_seed(21)
    runs = []
    for _ in range(2):
        record = play_game([ISMCTSAgent(iterations=25, seed=8), GreedyAgent()], hands=hands, stock=stock, seed=3)
        runs.append(record.actions)
    assert runs[0] == runs[1]


def test_ismcts_answers_single_choices_without_search():
    # Nothing in player 0's hand melds with the turned card: refusing is the only move.
    hands, stock = stacked_deal("AC 3C 5C 7C QC AD 3D 5D 7D QD", top="KH")
    state = new_game(hands=hands, stock=stock)
    bot = ISMCTSAgent(iterations=10_000, seed=1)
    bot.reset(0, seed=1)
    assert act(bot, state) == REFUSE
    assert bot.last_iterations == 0


# ------------------------------------------------------------------ strength (small samples)


def test_greedy_beats_random():
    wins, losses = _results(duplicate(GreedyAgent(), RandomAgent(seed=7), deals=60))
    assert wins >= 0.85 * (wins + losses), (wins, losses)


@pytest.mark.slow
def test_greedy_beats_random_long():
    for rules in RULE_CASES:
        wins, losses = _results(duplicate(GreedyAgent(), RandomAgent(seed=7), deals=1000, rules=rules))
        assert wins >= 0.9 * (wins + losses), (rules, wins, losses)


@pytest.mark.slow
def test_ismcts_beats_random():
    wins, losses = _results(duplicate(ISMCTSAgent(iterations=100, seed=3), RandomAgent(seed=8), deals=20))
    assert wins >= 0.85 * (wins + losses), (wins, losses)


# ------------------------------------------------------------------ rollout (flat Monte Carlo)


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_rollout_never_plays_an_illegal_action(rules):
    from agents.search.rollout import RolloutAgent

    records = duplicate(RolloutAgent(samples=3, seed=1), RandomAgent(seed=4), deals=3, rules=rules)
    records += duplicate(RolloutAgent(samples=3, infer=False, seed=2), GreedyAgent(), deals=3, rules=rules)
    assert all(r.failure is None for _, r in records), [r.failure for _, r in records if r.failure]
    assert all(r.replay()[-1].is_terminal() for _, r in records)


@pytest.mark.parametrize("seed,moves", [(11, 0), (13, 20)])
def test_rollout_decisions_ignore_the_hidden_cards(seed, moves):
    from agents.search.rollout import RolloutAgent

    state = mid_game_state(seed, moves)
    rng = random.Random(seed)
    outcomes = []
    for trial in range(3):
        variant = state if trial == 0 else permute_hidden(state, rng)
        bot = RolloutAgent(samples=6, seed=5)
        bot.reset(state.player, seed=99)
        outcomes.append((act(bot, variant), bot.last_scores))
    assert outcomes[0][1], "the decision was searched"
    assert all(o == outcomes[0] for o in outcomes), outcomes


def test_rollout_spec_and_bad_parameters():

    bot = make_agent("rollout:samples=5,infer=false", seed=3)
    assert (bot.samples, bot.infer) == (5, False)
    for bad in ("rollout:samples=0", "rollout:samples=2.5", "rollout:infer=7"):
        with pytest.raises(SpecError):
            make_agent(bad)


def test_spec_booleans_are_strict_and_keys_unique():
    # before: infer=maybe was taken as true and a repeated key silently kept the last value

    for bad in (
        "ismcts-py:infer=maybe",
        "ismcts-py:infer=2",
        "pimc:z=maybe",
        "ppo:deterministic=maybe",
        "rollout:infer=sometimes",
    ):
        with pytest.raises(SpecError):
            make_agent(bad)
    with pytest.raises(SpecError, match="given twice"):
        make_agent("pimc:iterations=10,iterations=20")
    assert make_agent("ismcts-py:infer=false,iterations=3").infer is False


def test_batched_greedy_playouts_equal_the_scalar_greedy_rollouts():
    # greedy_playouts (the rollout bot's batch=true) plays the same games as greedy_rollout
    pytest.importorskip("numba")
    from agents.search.ismcts import greedy_playouts, greedy_rollout

    rng = random.Random(3)
    leaves = []
    for seed in range(24):  # positions mid-game, determinized from player 0's side
        state = new_game(seed=seed, forcing=seed % 2 == 1)
        for _ in range(rng.randrange(0, 40)):
            if state.is_terminal():
                break
            legal = state.legal_actions()
            state.apply(legal[rng.randrange(len(legal))])
        if not state.is_terminal() and state.phase != 1:  # playouts start outside a meld
            leaves.append(state)
    expected = []
    for state in leaves:
        copy = state.clone()
        greedy_rollout(copy, rng)
        expected.append(copy.winner)
    assert greedy_playouts([s.clone() for s in leaves])[1] == expected
    assert len(leaves) > 15


def test_rollout_batched_playouts_give_the_same_decisions():
    pytest.importorskip("numba")
    from agents.search.rollout import RolloutAgent

    hands, stock = deal_for_seed(33)
    runs = []
    for batch in (False, True):
        bot = RolloutAgent(samples=6, batch=batch, seed=2)
        record = play_game([bot, GreedyAgent()], hands=hands, stock=stock, seed=5)
        assert record.failure is None
        runs.append(record.actions)
    assert runs[0] == runs[1]


# ------------------------------------------------------------------ features from the view only


def _feature_positions():
    """(state, observer) pairs from greedy self-play: every phase, both seats' sides."""
    for seed in range(6):
        hands, stock = deal_for_seed(900 + seed)
        state = new_game(hands=hands, stock=stock, forcing=seed % 2 == 1)
        bots = [GreedyAgent(), GreedyAgent()]
        while True:
            for observer in (0, 1):
                yield state.clone(), observer
            if state.is_terminal():
                break
            state.apply(act(bots[state.player], state))


def test_features_are_computed_from_the_view_alone():
    from agents.scorer.features import FeatureEncoder

    sealed, open_ = FeatureEncoder(), FeatureEncoder()
    count = 0
    for state, observer in _feature_positions():
        view = PlayerView(state, observer)
        got = sealed.encode(SealedView(view))  # nothing behind the view is reachable
        assert np.array_equal(got, open_.encode(view))
        count += 1
    assert count > 400


def test_policy_agent_acts_on_the_view_without_reaching_behind_it():
    bot = make_agent("ppo", seed=1)
    assert bot.policy.features == "meld"
    twin = make_agent("ppo", seed=1)
    moves = 0
    for state, observer in _feature_positions():
        if state.current_player != observer:
            continue
        obs, mask = encode(state, observer), action_mask(state, observer)
        view = PlayerView(state, observer)
        assert bot.act(obs, mask, SealedView(view)) == twin.act(obs, mask, view)
        moves += 1
    assert moves > 150


def test_the_feature_encoder_takes_a_players_view_only():
    from agents.scorer.features import FeatureEncoder

    state = mid_game_state(4, 12)
    with pytest.raises(TypeError, match="needs a PlayerView"):
        FeatureEncoder().encode(encode(state, 0))
    with pytest.raises(TypeError, match="needs a PlayerView"):
        FeatureEncoder().encode(state)
