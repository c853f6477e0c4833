"""The batched engine (conquian_env.vector) against the scalar engine, game by game.

Thousands of random games are played through both engines from the same deals with the
same actions; every observation, mask, player to move, result and full state is compared.
"""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest

pytest.importorskip("numba")

from conquian_env import actions, game, observation  # noqa: E402
from conquian_env import kernels as K  # noqa: E402
from conquian_env.game import IllegalActionError, new_game  # noqa: E402
from conquian_env.melds import can_extend_to_meld, can_split_into_melds, playable_cards  # noqa: E402
from conquian_env.observation import action_mask, encode  # noqa: E402
from conquian_env.rules import Rules  # noqa: E402
from conquian_env.vector import ROW_LAYOUT, VectorGame, deal_permutation  # noqa: E402
from tests.conftest import RULE_CASES  # noqa: E402


def test_kernel_constants_match_the_scalar_modules():
    assert (K.OFFER, K.MELD, K.DISCARD, K.FORCE_DECISION, K.GAME_OVER) == (
        game.OFFER,
        game.MELD,
        game.DISCARD,
        game.FORCE_DECISION,
        game.GAME_OVER,
    )
    assert (K.TURNED, K.DISCARDED, K.STOCK_SIZE) == (game.TURNED, game.DISCARDED, game.STOCK_SIZE)
    assert (K.DISCARD_BASE, K.TAKE, K.REFUSE, K.FINISH, K.FORCE, K.NO_FORCE, K.NUM_ACTIONS) == (
        actions.DISCARD_BASE,
        actions.TAKE,
        actions.REFUSE,
        actions.FINISH,
        actions.FORCE,
        actions.NO_FORCE,
        actions.NUM_ACTIONS,
    )
    at = observation.OBS_AT
    assert K.OBS_SIZE == observation.OBS_SIZE
    assert (K.O_OWN_MELD, K.O_OPP_MELD, K.O_FACE, K.O_DEAD, K.O_PENDING) == (
        at["own_meld"],
        at["opponent_meld"],
        at["face_up"],
        at["dead"],
        at["pending_meld"],
    )
    assert (K.O_OPP_DISC, K.O_OPP_REF, K.O_OWN_DISC, K.O_OWN_REF) == (
        at["opponent_discards"],
        at["opponent_refusals"],
        at["own_discards"],
        at["own_refusals"],
    )
    assert (K.O_STOCK, K.O_OWN_SIZE, K.O_OPP_SIZE, K.O_PHASE, K.O_SOURCE) == (
        at["stock_size"],
        at["own_hand_size"],
        at["opponent_hand_size"],
        at["phase"],
        at["source"],
    )
    assert (K.O_PASSED, K.O_FORCED) == (at["passed"], at["forced"])
    fields = Rules.field_names()  # the rule pieces, one run in field order: slot O_RULES + k is field k's
    assert [at[name] for name in fields] == [K.O_RULES + k for k in range(K.N_RULES)]


def test_kernel_row_columns_follow_the_field_table():
    """The kernels' literal column constants are the layout derived from game.FIELDS."""
    at = ROW_LAYOUT
    kernel = {
        "hands": (K.H0, K.H1),
        "melds": (K.M0, K.M1),
        "discards": (K.DI0, K.DI1),
        "refusals": (K.RF0, K.RF1),
        "dead": (K.DEAD,),
        "chosen": (K.CHOSEN,),
        "face_up": (K.FACE,),
        "source": (K.SOURCE,),
        "owner": (K.OWNER,),
        "passed": (K.PASSED,),
        "player": (K.PLAYER,),
        "phase": (K.PHASE,),
        "winner": (K.WINNER,),
        "forced": (K.FORCED,),
        "rules": (K.RULES,),
        "move_count": (K.MOVES,),
        "stock_pos": (K.SPOS,),
        "stock": tuple(K.STOCK0 + k for k in range(K.STOCK_SIZE)),
    }
    assert set(kernel) == {f.name for f in game.FIELDS}
    for f in game.FIELDS:
        assert kernel[f.name] == tuple(range(at[f.name], at[f.name] + game.FIELD_WIDTH[f.kind])), f.name
    assert (K.LCARDS, K.LMISC, K.NUM_COLUMNS) == (at["legal_cards"], at["legal_other"], at["num_columns"])
    used = sorted(c for cols in kernel.values() for c in cols) + [K.LCARDS, K.LMISC]
    assert sorted(used) == list(range(K.NUM_COLUMNS))  # every column is one field's, once


def test_get_and_set_game_carry_every_field_of_the_table():
    vg = VectorGame(4, seed=9, forcing=True)
    rng = np.random.default_rng(1)
    for _ in range(40):
        vg.step(vg.random_actions(rng))
    other = VectorGame(4, seed=0)
    for i in range(4):
        s = vg.get_game(i)
        s.forced = not s.forced if s.phase == game.MELD else s.forced
        s.move_count += 1000  # history and counters travel too (to_dict leaves some out)
        other.set_game(i, s)
        back = other.get_game(i)
        for f in game.FIELDS:
            value = getattr(back, f.name)
            assert value == getattr(s, f.name), f.name
            kind_type = {game.PAIR: list, game.STOCK: tuple, game.BOOL: bool, game.RULES: Rules}.get(f.kind, int)
            assert type(value) is kind_type, f.name
            if f.kind in (game.PAIR, game.STOCK):
                assert all(type(x) is int for x in value), f.name


def _random_pool(rng: random.Random) -> tuple[int, int]:
    kind = rng.random()
    if kind < 0.3:  # set-heavy: few ranks, many suits
        ranks = rng.sample(range(10), 4)
        cards = [s * 10 + r for r in ranks for s in range(4) if rng.random() < 0.8]
    elif kind < 0.6:  # run-heavy: few suits
        suits = rng.sample(range(4), 2)
        cards = [s * 10 + r for s in suits for r in range(10) if rng.random() < 0.6]
    else:
        cards = rng.sample(range(40), rng.randint(3, 16))
    rng.shuffle(cards)
    cut = rng.randint(1, len(cards)) if cards else 0
    required = sum(1 << c for c in cards[:cut])
    optional = sum(1 << c for c in cards[cut:])
    return required, optional


def test_meld_kernels_equal_the_scalar_meld_logic():
    rng = random.Random(11)
    for _ in range(20000):
        required, optional = _random_pool(rng)
        assert K.can_extend(required, optional) == can_extend_to_meld(required, optional)
        assert K.can_split(required) == can_split_into_melds(required)
        assert K.playable(required, optional) == playable_cards(required, optional)


def _play_both(n: int, steps: int, rules: Rules, seed: int) -> int:
    """Random play through both engines; returns the number of finished games compared."""
    vg = VectorGame(n, seed=seed, rules=rules, first="alternate")
    # the vector engine's own deals, replayed by the scalar engine from their permutations
    scalar = [vg.get_game(i) for i in range(n)]
    for i, s in enumerate(scalar):
        again = new_game(hands=[_cards(s.hands[0]), _cards(s.hands[1])], stock=list(s.stock), first=s.player)
        again.rules = rules
        assert again.to_dict() == s.to_dict(), i
    rng = np.random.default_rng(seed)
    finished = 0
    obs, masks = vg.observations, vg.masks
    for _ in range(steps):
        for i, s in enumerate(scalar):
            assert vg.players[i] == s.current_player
            assert np.array_equal(obs[i], encode(s, s.player)), i
            assert np.array_equal(masks[i], action_mask(s, s.player)), i
            assert vg.get_game(i).legal_actions() == s.legal_actions()
        a = vg.random_actions(rng)
        result = vg.step(a)
        obs, masks = result.observations, result.masks
        for i, s in enumerate(scalar):
            s.apply(int(a[i]))
            if s.is_terminal():
                finished += 1
                assert result.dones[i]
                assert result.winners[i] == s.winner
                assert tuple(result.rewards[i]) == s.returns()
                assert result.moves[i] == s.move_count
                scalar[i] = vg.get_game(i)  # the new deal, checked against new_game at the next step
                assert scalar[i].move_count == 0 and scalar[i].stock_pos == 1
            else:
                assert not result.dones[i] and result.winners[i] == -2
                assert vg.get_game(i).to_dict() == s.to_dict()
    return finished


def _cards(mask: int) -> list[int]:
    return [c for c in range(40) if mask >> c & 1]


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_random_games_match_the_scalar_engine(rules):
    finished = _play_both(96, 1400, rules, seed=3 + rules.flags)
    assert finished >= 2000


@pytest.mark.slow
@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_many_random_games_match_the_scalar_engine(rules):
    assert _play_both(512, 3000, rules, seed=30 + rules.flags) >= 20000


def test_observing_the_player_not_to_move():
    vg = VectorGame(32, seed=9)
    rng = np.random.default_rng(1)
    for _ in range(50):
        vg.step(vg.random_actions(rng))
    other = 1 - vg.players
    obs, masks = vg.observe(other)
    for i in range(32):
        s = vg.get_game(i)
        assert np.array_equal(obs[i], encode(s, int(other[i])))
        assert not masks[i].any()


def test_stacked_deal_equals_new_game():
    hands = [["AC", "2C", "3C", "4D", "5D", "6D", "JH", "QH", "KH", "AS"], "2S 3S 4S 5S 6S 7S JS QS KS AD"]
    stock = "2D 3D 7D JD QD KD AH 2H 3H 4H 5H 6H 7H 5C 6C 7C JC QC KC 4C"
    perm = deal_permutation(hands, stock)
    vg = VectorGame(2, seed=0)
    vg.reset(deals=np.stack([perm, perm]))
    assert vg.get_game(0).to_dict() == new_game(hands=hands, stock=stock).to_dict()
    with pytest.raises(ValueError, match="dealt twice"):
        deal_permutation([hands[0], hands[0]], stock)


def test_same_seed_same_games_and_rows_round_trip():
    a, b = VectorGame(16, seed=42, first="alternate"), VectorGame(16, seed=42, first="alternate")
    ra, rb = np.random.default_rng(0), np.random.default_rng(0)
    for _ in range(200):
        a.step(a.random_actions(ra))
        b.step(b.random_actions(rb))
    assert np.array_equal(a.state, b.state)
    assert a.deals_made == b.deals_made > 16
    c = VectorGame(16, seed=0)
    for i in range(16):  # any position, put into another engine's row, reads back the same
        c.set_game(i, a.get_game(i))
        assert c.get_game(i).to_dict() == a.get_game(i).to_dict()
        assert c.get_game(i).legal_action_mask() == a.get_game(i).legal_action_mask()
    assert np.array_equal(c.state, a.state)
    d = pickle.loads(pickle.dumps(a))
    assert np.array_equal(d.state, a.state)


def test_illegal_actions_raise_or_forfeit():
    vg = VectorGame(4, seed=5)
    before = vg.state.copy()
    acts = vg.random_actions(np.random.default_rng(0))
    acts[2] = actions.FINISH  # never legal in an offer
    with pytest.raises(IllegalActionError, match=r"game 2: illegal action 82 \(finish\)"):
        vg.step(acts)
    assert np.array_equal(vg.state, before)  # nothing moved, in any game
    pen = VectorGame(4, seed=5, illegal_action="penalize")
    mover = int(pen.players[2])
    result = pen.step(acts)
    assert result.illegal.tolist() == [False, False, True, False]
    assert result.dones[2] and result.winners[2] == 1 - mover
    assert result.rewards[2, mover] == -1 and result.rewards[2, 1 - mover] == 1


def test_bad_input_is_named():
    vg = VectorGame(3, seed=0)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        vg.step([80, 81])
    with pytest.raises(ValueError, match="integers"):
        vg.step(np.array([80.0, 81.0, 81.0]))
    with pytest.raises(ValueError, match="integers"):
        vg.step(np.array([True, False, True]))
    with pytest.raises(ValueError, match="not a permutation"):
        vg.reset(deals=np.zeros((3, 40), dtype=np.int64))
    with pytest.raises(ValueError, match=r"shape \(3, 40\)"):
        vg.reset(deals=np.zeros((2, 40), dtype=np.int64))
    with pytest.raises(ValueError, match="num_games"):
        VectorGame(0)
    with pytest.raises(ValueError, match="first"):
        VectorGame(2, first=2)
    with pytest.raises(ValueError, match="illegal_action"):
        VectorGame(2, illegal_action="ignore")
    with pytest.raises(ValueError, match="players must be 0 or 1"):
        vg.observe(np.array([0, 1, 2]))


def test_numpy_integer_and_list_actions_are_accepted():
    vg = VectorGame(2, seed=1)
    acts = vg.random_actions(np.random.default_rng(2))
    result = vg.step([np.int32(acts[0]), int(acts[1])])
    assert result.masks.shape == (2, 85)


def test_compiled_random_play_leaves_consistent_games():
    vg = VectorGame(64, seed=3, forcing=True, observations=False)
    finished = vg.play_random(300, seed=4)
    assert finished > 64  # about 60 decisions a game
    for i in range(64):
        s = vg.get_game(i)
        fresh = s.clone()
        fresh._mask = -1  # recompute from the position alone
        assert fresh.legal_action_mask() == _row_mask(vg, i)
        assert s.hands[0].bit_count() + s.melds[0].bit_count() <= 11


def _row_mask(vg: VectorGame, i: int) -> int:
    _, masks = vg.observe()
    return sum(1 << int(a) for a in np.flatnonzero(masks[i]))


def test_popcount_is_right_inside_compiled_comparisons():
    """The classic multiply-based popcount overflowed int64 and, inlined, made numba fold
    ``popcount(x) <= 7`` to False for six cards above index 31 (a bug the greedy port hit)."""
    from numba import njit

    @njit
    def at_most_seven(x):
        return K.popcount(x) <= 7

    rng = random.Random(5)
    for _ in range(2000):
        cards = rng.sample(range(40), rng.randint(0, 12))
        mask = sum(1 << c for c in cards)
        assert K.popcount(mask) == len(cards)
        assert at_most_seven(mask) == (len(cards) <= 7)
    assert at_most_seven(sum(1 << c for c in range(32, 38)))


def _mutated(base, **fields):
    s = base.clone()
    for name, value in fields.items():
        setattr(s, name, value)
    return s


def test_set_game_checks_every_field_first_and_leaves_the_engine_as_it_was_on_error():
    vg = VectorGame(3, seed=4)
    rng = np.random.default_rng(0)
    for _ in range(7):
        vg.step(vg.random_actions(rng))
    base = vg.get_game(1)
    other = 1 - base.player
    shared = base.hands[0] & -base.hands[0]  # a card of hand 0, also put in hand 1
    bad = {
        "player": _mutated(base, player=44),  # wrote into another game's row
        "player ": _mutated(base, player=10**9),  # crashed the process
        "phase": _mutated(base, phase=9),
        "face_up": _mutated(base, face_up=45),
        "both hands": _mutated(base, hands=[base.hands[0], base.hands[1] | shared]),
        "stock": _mutated(base, stock=base.stock[:-1]),  # left a half-written row
        "stock_pos": _mutated(base, stock_pos=21),
        "winner": _mutated(base, winner=other),
        "hands": _mutated(base, hands=[base.hands[0]]),
        "melds": _mutated(base, melds=[-1, 0]),
        "passed": _mutated(base, passed=2),
        "move_count": _mutated(base, move_count=-1),
        "chosen": _mutated(base, chosen=base.hands[other]),
        "in no place": _mutated(base, dead=0, hands=[base.hands[0] & ~shared, base.hands[1]]),
    }
    before = vg.state.copy()
    for what, state in bad.items():
        with pytest.raises(ValueError, match=what.strip()):
            vg.set_game(1, state)
        assert np.array_equal(vg.state, before), what  # nothing written, in any row
    assert vg.observe()[1][1].any()  # the game in row 1 still has its legal moves
    vg.set_game(2, base)  # the untouched state goes in
    assert vg.get_game(2).to_dict() == base.to_dict()


def test_game_state_validate_accepts_every_reachable_position():
    rng = np.random.default_rng(3)
    for g in range(60):
        s = new_game(seed=g, forcing=bool(g % 2), first=g % 2)
        while True:
            s.validate()
            if s.is_terminal():
                break
            if rng.random() < 0.01:
                s.forfeit(s.player)
                continue
            if rng.random() < 0.05:
                s.determinize(int(rng.integers(2)), rng).validate()
            s.apply(int(rng.choice(s.legal_actions())))


def test_a_failed_reset_changes_nothing():
    vg, twin = VectorGame(2, seed=3), VectorGame(2, seed=3)
    before = vg.state.copy()
    with pytest.raises(ValueError, match="not a permutation"):
        vg.reset(seed=7, deals=np.zeros((2, 40), dtype=np.int64))
    assert np.array_equal(vg.state, before)
    vg.reset()
    twin.reset()  # the deal generator went on as if the failed call had not happened
    assert np.array_equal(vg.state, twin.state)


def test_messages_name_the_value_given():
    vg = VectorGame(2, seed=0)
    with pytest.raises(ValueError, match="18446744073709551615 is not an action id"):  # not wrapped to -1
        vg.step(np.array([2**64 - 1, 81], dtype=np.uint64))
    vg.step(np.array([2**64 - 1, 81], dtype=np.uint64), where=np.array([False, True]))  # left out: fine
    with pytest.raises(ValueError, match="rng must be a numpy Generator"):
        vg.random_actions(rng=5)
    assert VectorGame(2, seed=0, first=np.int64(1)).players.tolist() == [1, 1]  # as new_game(first=np.int64(1))
    for bad in (True, -1, 1.5, "7"):
        with pytest.raises(ValueError, match=f"seed must be an integer >= 0.*got {bad!r}"):
            vg.reset(seed=bad)
        with pytest.raises(ValueError, match="seed must be an integer >= 0"):
            VectorGame(2, seed=bad)


def test_deal_cards_is_deal_permutations_inverse():
    from conquian_env.vector import deal_cards, deal_permutation

    for seed in range(20):
        perm = np.random.default_rng(seed).permutation(40)
        hands, stock = deal_cards(perm)
        assert len(hands[0]) == len(hands[1]) == 10 and len(stock) == 20
        np.testing.assert_array_equal(deal_permutation(hands, stock)[20:], perm[20:])
        assert deal_cards(deal_permutation(hands, stock)) == (hands, stock)
    with pytest.raises(ValueError, match="permutation of the 40 cards"):
        deal_cards(np.zeros(40, int))
