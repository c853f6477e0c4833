"""conquian_env.integrations.openspiel and agents.openspiel_bot: Conquian as an OpenSpiel game.

OpenSpiel's own checks (random_sim_test), the same deals played through OpenSpiel's API and
our engine move by move, the chance nodes, the information state (perfect recall, re-dealt
by resample_from_infostate), OpenSpiel's ISMCTS in evaluate_bots, our bots in OpenSpiel
and OpenSpiel's bots in our arena.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from open_spiel.python.algorithms.evaluate_bots import evaluate_bots  # noqa: E402

from agents.base import RandomAgent  # noqa: E402
from agents.greedy.greedy import GreedyAgent  # noqa: E402
from agents.openspiel_bot import (  # noqa: E402
    AgentBot,
    OpenSpielAgent,
    OpenSpielISMCTSAgent,
    OpenSpielRandomAgent,
    ismcts_bot,
)
from agents.registry import make_agent  # noqa: E402
from conquian_arena.match import deal_for_seed, play_game  # noqa: E402
from conquian_env.actions import FINISH, TAKE, action_to_str, discard_action, meld_action  # noqa: E402
from conquian_env.cards import CARD_NAMES, parse_card  # noqa: E402
from conquian_env.game import IllegalActionError, new_game  # noqa: E402
from conquian_env.integrations.openspiel import (  # noqa: E402
    DEAL_LENGTH,
    GAME_NAME,
    INFO_STATE_SIZE,
    MAX_DECISIONS,
    game_state_of,
    load_game,
)
from conquian_env.observation import OBS_SIZE, encode  # noqa: E402
from conquian_env.rules import FORCING  # noqa: E402

from .conftest import RULE_CASES, stacked_deal  # noqa: E402


def deal_moves(hands, stock):
    """The 40 chance outcomes that deal ``hands`` (two lists of ten) and ``stock`` (top first)."""
    moves = []
    for a, b in zip(hands[0], hands[1], strict=True):
        moves += [parse_card(a), parse_card(b)]
    return moves + [parse_card(c) for c in stock]


def dealt_state(game, hands, stock):
    state = game.new_initial_state()
    for card in deal_moves(hands, stock):
        state.apply_action(card)
    return state


def random_deal(rng):
    cards = list(CARD_NAMES)
    rng.shuffle(cards)
    return [cards[0:10], cards[10:20]], cards[20:]


# ---------------------------------------------------------------- OpenSpiel's own checks
@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_random_sim_test_passes(rules):
    fields = rules.to_dict()
    game = pyspiel.load_game(f"{GAME_NAME}({','.join(f'{n}={str(on).lower()}' for n, on in fields.items())})")
    assert game.rules == rules
    assert game.rules == rules and game.get_parameters() == fields
    pyspiel.random_sim_test(game, num_sims=3, serialize=True, verbose=False)


def test_game_type_info_and_tensor_sizes():
    game = load_game()
    kind = game.get_type()
    assert kind.chance_mode == pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC
    assert kind.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    assert kind.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert kind.reward_model == pyspiel.GameType.RewardModel.TERMINAL
    assert game.num_distinct_actions() == 85
    assert game.max_chance_outcomes() == 40
    assert game.max_game_length() == MAX_DECISIONS
    assert game.observation_tensor_size() == OBS_SIZE == 456
    assert game.information_state_tensor_size() == INFO_STATE_SIZE == 456 + 7 * 40
    assert (game.min_utility(), game.max_utility()) == (-1.0, 1.0)


def test_bad_parameters_are_refused():
    with pytest.raises(pyspiel.SpielError, match="forcing"):
        pyspiel.load_game(GAME_NAME, {"forcing": 1})
    with pytest.raises(pyspiel.SpielError):
        pyspiel.load_game(GAME_NAME, {"first": 1})
    with pytest.raises(ValueError, match="forcing"):
        load_game(forcing="yes")


# ---------------------------------------------------------------- the deal as chance nodes
def test_the_deal_is_forty_uniform_chance_nodes():
    game = load_game()
    state = game.new_initial_state()
    hands, stock = random_deal(random.Random(3))
    dealt = []
    for card in deal_moves(hands, stock):
        assert state.is_chance_node()
        outcomes = state.chance_outcomes()
        assert [a for a, _ in outcomes] == sorted(set(range(40)) - set(dealt))
        assert all(p == pytest.approx(1 / (40 - len(dealt))) for _, p in outcomes)
        assert state.action_to_string(pyspiel.PlayerId.CHANCE, card) == f"deal {CARD_NAMES[card]}"
        # a player sees their own cards dealt so far, nothing of the other's
        for p in (0, 1):
            own = {c for i, c in enumerate(dealt) if i < 20 and i % 2 == p}
            assert set(np.flatnonzero(state.observation_tensor(p)[:40])) == own
        state.apply_action(card)
        dealt.append(card)
    assert not state.is_chance_node() and state.current_player() == 0
    gs = game_state_of(state)
    assert gs.face_up == parse_card(stock[0]) and gs.stock_pos == 1  # player 0 turned the top card
    assert [sorted(CARD_NAMES[c] for c in range(40) if gs.hands[p] >> c & 1) for p in (0, 1)] == [
        sorted(h) for h in hands
    ]


def test_chance_outcomes_off_the_deal_is_a_value_error_as_in_openspiels_python_games():
    # before: a ZeroDivisionError at any decision or terminal node (no cards left to deal);
    # OpenSpiel's Python games (python_kuhn_poker) raise ValueError there
    game = load_game()
    state = dealt_state(game, *random_deal(random.Random(5)))
    with pytest.raises(ValueError, match="non-chance state \\(a decision of player 0\\).*first 40 moves"):
        state.chance_outcomes()
    while not state.is_terminal():
        state.apply_action(state.legal_actions()[-1])
    with pytest.raises(ValueError, match="non-chance state \\(a terminal state\\)"):
        state.chance_outcomes()
    hands, stock = deal_for_seed(4)
    with pytest.raises(ValueError, match="non-chance state"):
        game.state_from_position(new_game(hands=hands, stock=stock)).chance_outcomes()
    assert len(game.new_initial_state().chance_outcomes()) == 40  # the deal still has its 40 outcomes


def test_dealing_a_card_twice_or_a_non_card_is_an_error():
    state = load_game().new_initial_state()
    state.apply_action(5)
    with pytest.raises(ValueError, match="6C is already dealt"):
        state.apply_action(5)
    with pytest.raises(ValueError, match="card index 0..39"):
        state.apply_action(40)
    assert len(state.chance_outcomes()) == 39  # nothing changed


# ---------------------------------------------------------------- the same deals, both engines
def play_both(seed, rules):
    """One random game through OpenSpiel's API and through our engine from the same deal."""
    rng = random.Random(seed)
    hands, stock = random_deal(rng)
    ours = new_game(hands=hands, stock=stock, first=0, rules=rules)
    theirs = dealt_state(load_game(rules), hands, stock)
    steps = 0
    while not ours.is_terminal():
        assert theirs.current_player() == ours.player
        legal = theirs.legal_actions()
        assert legal == ours.legal_actions()
        assert [theirs.action_to_string(a) for a in legal] == [action_to_str(a) for a in legal]
        for p in (0, 1):
            assert np.array_equal(theirs.observation_tensor(p), encode(ours, p))
        action = legal[rng.randrange(len(legal))]
        ours.apply(action)
        theirs.apply_action(action)
        steps += 1
    assert theirs.is_terminal()
    assert theirs.returns() == [float(r) for r in ours.returns()]
    for p in (0, 1):
        assert np.array_equal(theirs.observation_tensor(p), encode(ours, p))
    assert steps <= MAX_DECISIONS
    return steps


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_same_deals_same_legal_actions_and_results(rules):
    for seed in range(8):
        play_both(seed, rules)


@pytest.mark.slow
@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_same_deals_same_legal_actions_and_results_many(rules):
    for seed in range(16, 216):
        play_both(seed, rules)


def test_illegal_action_is_refused_with_the_legal_ones():
    state = dealt_state(load_game(), *random_deal(random.Random(1)))
    with pytest.raises(IllegalActionError, match="legal actions: 80 .take., 81 .refuse.|legal actions: 81 .refuse."):
        state.apply_action(FINISH)  # not legal when a card is offered
    assert state.current_player() == 0 and game_state_of(state).phase == 0  # nothing changed


# ---------------------------------------------------------------- the information state
def test_information_state_keeps_the_order_the_observation_loses():
    # player 0 takes the turned AC and lays 2C 3C: in one order or the other
    hands, stock = stacked_deal("2C 3C 5D 7H JS QD KH 4S 6D 2H", top="AC")
    game = load_game()
    states = []
    for order in (["2C", "3C"], ["3C", "2C"]):
        state = dealt_state(game, hands, stock)
        state.apply_action(TAKE)
        for card in order:
            state.apply_action(meld_action(parse_card(card)))
        state.apply_action(FINISH)
        state.apply_action(discard_action(parse_card("KH")))
        states.append(state)
    a, b = states
    for p in (0, 1):
        assert a.observation_tensor(p) == b.observation_tensor(p)
        assert a.observation_string(p) == b.observation_string(p)
        assert a.information_state_string(p) != b.information_state_string(p)
        assert a.information_state_tensor(p) != b.information_state_tensor(p)
    assert "p0 meld 2C p0 meld 3C" in a.information_state_string(1)
    assert "p0 meld 3C p0 meld 2C" in b.information_state_string(1)


def test_information_state_tensor_and_string_name_the_same_information_states():
    """Random play from one deal reaches many information states: the tensor tells apart
    exactly those the string does (perfect recall), the observation does not."""
    game = load_game(forcing=True)
    hands, stock = random_deal(random.Random(11))
    by_tensor: dict[tuple[int, bytes], str] = {}
    by_string: dict[tuple[int, str], bytes] = {}
    obs_merges = 0
    obs_seen: dict[tuple[int, bytes], str] = {}
    for game_seed in range(14):
        rng = random.Random(game_seed)
        state = dealt_state(game, hands, stock)
        while not state.is_terminal():
            for p in (0, 1):
                tensor = np.asarray(state.information_state_tensor(p), np.float32).tobytes()
                text = state.information_state_string(p)
                assert by_tensor.setdefault((p, tensor), text) == text
                assert by_string.setdefault((p, text), tensor) == tensor
                obs = np.asarray(state.observation_tensor(p), np.float32).tobytes()
                obs_merges += obs_seen.setdefault((p, obs), text) != text
            legal = state.legal_actions()
            state.apply_action(legal[rng.randrange(len(legal))])
    assert len(by_string) > 500
    assert obs_merges > 0  # the observation alone merges some different histories


def test_resample_from_infostate_keeps_what_the_player_knows():
    game = load_game()
    rng = random.Random(5)
    changed = 0
    for game_seed in range(3):
        state = dealt_state(game, *random_deal(random.Random(100 + game_seed)))
        sampler = np.random.RandomState(game_seed).uniform
        while not state.is_terminal():
            for p in (0, 1):
                other = state.resample_from_infostate(p, sampler)
                assert other.information_state_string(p) == state.information_state_string(p)
                assert other.information_state_tensor(p) == state.information_state_tensor(p)
                assert other.observation_tensor(p) == state.observation_tensor(p)
                assert other.history()[DEAL_LENGTH:] == state.history()[DEAL_LENGTH:]
                if p == state.current_player():  # the other's legal moves depend on their hidden cards
                    assert other.legal_actions() == state.legal_actions()
                theirs, mine = game_state_of(other), game_state_of(state)
                assert theirs.hands[p] == mine.hands[p]
                changed += theirs.hands[1 - p] != mine.hands[1 - p]
            legal = state.legal_actions()
            state.apply_action(legal[rng.randrange(len(legal))])
    assert changed > 0  # the opponent's hidden cards are re-dealt


def test_a_state_from_a_position_plays_on_and_resamples():
    hands, stock = deal_for_seed(4)
    position = new_game(hands=hands, stock=stock)
    for _ in range(6):
        position.apply(position.legal_actions()[-1])
    game = load_game()
    state = game.state_from_position(position)
    assert state.history() == [] and state.current_player() == position.player
    assert state.legal_actions() == position.legal_actions()
    for p in (0, 1):
        assert np.array_equal(state.observation_tensor(p), encode(position, p))
        assert state.information_state_string(p).startswith(f"p{p} from [")
    state.apply_action(state.legal_actions()[0])
    p = state.current_player()
    other = state.resample_from_infostate(p, np.random.RandomState(0).uniform)
    assert other.information_state_string(p) == state.information_state_string(p)
    assert other.legal_actions() == state.legal_actions()
    with pytest.raises(ValueError, match="forcing"):
        load_game(forcing=True).state_from_position(position)


# ---------------------------------------------------------------- bots, both ways
def test_openspiel_ismcts_plays_in_evaluate_bots_reproducibly():
    game = load_game(forcing=True)
    results = []
    for _ in range(2):
        bots = [ismcts_bot(game, seed=7, simulations=8), pyspiel.make_uniform_random_bot(1, 3)]
        state = game.new_initial_state()
        returns = evaluate_bots(state, bots, np.random.RandomState(2))
        assert returns in ([1.0, -1.0], [-1.0, 1.0], [0.0, 0.0])
        results.append(state.history())
    assert results[0] == results[1]


def test_agent_bot_plays_as_our_game_loop_plays():
    """Greedy against greedy through OpenSpiel makes the moves play_game records on the same deal."""
    game = load_game(forcing=True)
    for seed in range(4):
        hands, stock = deal_for_seed(seed)
        record = play_game([GreedyAgent(), GreedyAgent()], hands=hands, stock=stock, rules=FORCING, seed=seed)
        state = dealt_state(game, hands, stock)
        bots = [AgentBot(GreedyAgent(), player=p, seed=seed) for p in (0, 1)]
        for bot in bots:
            bot.restart_at(state)
        moves = []
        while not state.is_terminal():
            action = bots[state.current_player()].step(state)
            moves.append(action_to_str(action))
            state.apply_action(action)
        assert moves == record.actions
        winner = None if state.returns()[0] == 0 else int(state.returns()[1] > 0)
        assert winner == record.winner


def test_our_bots_play_openspiel_bots_in_evaluate_bots():
    game = load_game()
    wins = losses = 0
    for g in range(12):
        seat = g % 2
        bots = [None, None]
        bots[seat] = AgentBot("greedy", player=seat, seed=g)
        bots[1 - seat] = pyspiel.make_uniform_random_bot(1 - seat, g)
        returns = evaluate_bots(game.new_initial_state(), bots, np.random.RandomState(g))
        wins += returns[seat] > 0
        losses += returns[seat] < 0
    # greedy beats uniform random (about 55% wins, 40% draws, 3% losses over 100 games)
    assert wins > 2 * losses + 1
    # and plays OpenSpiel's ISMCTS, in both seats
    for seat in (0, 1):
        bots = [None, None]
        bots[seat] = AgentBot(GreedyAgent(), player=seat, seed=1)
        bots[1 - seat] = ismcts_bot(game, seed=2, simulations=5)
        returns = evaluate_bots(game.new_initial_state(), bots, np.random.RandomState(seat))
        assert returns in ([1.0, -1.0], [-1.0, 1.0], [0.0, 0.0])


def test_agent_bot_refuses_bad_input():
    with pytest.raises(TypeError, match="Agent"):
        AgentBot(object(), player=0)
    with pytest.raises(ValueError, match="player"):
        AgentBot("random", player=2)
    bot = AgentBot("random", player=1)
    state = dealt_state(load_game(), *random_deal(random.Random(0)))
    with pytest.raises(ValueError, match="player 0"):
        bot.step(state)  # player 0 is to move


def test_openspiel_bots_play_in_our_arena_without_seeing_hidden_cards():
    seen = []

    class Spy(pyspiel.Bot):
        def __init__(self, player):
            pyspiel.Bot.__init__(self)
            self.player = player
            self.inner = pyspiel.make_uniform_random_bot(player, 1)

        def step(self, state):
            seen.append(game_state_of(state).clone())
            return self.inner.step(state)

    hands, stock = deal_for_seed(9)
    real = []  # the true hands at each of player 0's decisions

    def watch(before, action, after):
        if before.player == 0:
            real.append(before.hands[:])

    spy = OpenSpielAgent(lambda game, player, seed: Spy(player), name="spy")
    record = play_game([spy, RandomAgent()], hands=hands, stock=stock, seed=1, on_move=watch)
    assert record.failure is None and record.decisions[0] == len(seen) == len(real)
    assert all(s.hands[0] == h[0] for s, h in zip(seen, real, strict=True))  # its own hand, as it is
    assert any(s.hands[1] != h[1] for s, h in zip(seen, real, strict=True))  # the opponent's: re-dealt


def test_openspiel_agents_by_spec_are_reproducible():
    ismcts = make_agent("python:agents.openspiel_bot:OpenSpielISMCTSAgent,simulations=4")
    assert isinstance(ismcts, OpenSpielISMCTSAgent)
    hands, stock = deal_for_seed(3)
    records = [
        play_game([ismcts, GreedyAgent()], hands=hands, stock=stock, rules=FORCING, seed=5).actions for _ in range(2)
    ]
    assert records[0] == records[1]
    record = play_game([OpenSpielRandomAgent(seed=1), RandomAgent(seed=2)], hands=hands, stock=stock, seed=6)
    assert record.failure is None
    with pytest.raises(ValueError, match="simulations"):
        OpenSpielISMCTSAgent(simulations=0)
