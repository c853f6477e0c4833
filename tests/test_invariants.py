"""Invariants checked after every move of thousands of seeded random games (OpenSpiel style).

After every step: the 40 cards are each in exactly one place (a hand, a meld, the dead
pile, the face-up card, the rest of the stock); every meld splits into valid sets and
runs (checked with this file's own validators on ``split_into_melds``); each player
holds 10 cards in hand and meld between turns and 11 while melding after a take; legal
actions are never empty before the end; the game ends with returns (1, -1), (-1, 1) or
(0, 0); ``clone()`` is independent of the original; ``determinize(player, rng)`` keeps
everything the player can see and re-deals only the cards the player cannot see.
"""

from __future__ import annotations

import random

import pytest

from conquian_env import actions
from conquian_env.game import (
    DISCARD,
    DISCARDED,
    FORCE_DECISION,
    GAME_OVER,
    MELD,
    OFFER,
    STOCK_SIZE,
    TURNED,
    GameState,
    new_game,
)
from conquian_env.melds import split_into_melds

FULL = (1 << 40) - 1
MAX_MOVES = 500  # far above any real game: every refusal uses a stock card, every take melds


# ----------------------------------------------------------------------------- own validators


def _cards(mask: int) -> list[int]:
    return [i for i in range(40) if mask >> i & 1]


def is_valid_set(mask: int) -> bool:
    cards = _cards(mask)
    return 3 <= len(cards) <= 4 and len({c % 10 for c in cards}) == 1


def is_valid_run(mask: int) -> bool:
    cards = _cards(mask)
    if not 3 <= len(cards) <= 8 or len({c // 10 for c in cards}) != 1:
        return False
    ranks = sorted(c % 10 for c in cards)
    return ranks == list(range(ranks[0], ranks[0] + len(ranks)))


_split_checked: set[int] = set()


def check_meld_splits(meld: int) -> None:
    if meld in _split_checked:
        return
    parts = split_into_melds(meld)
    union = 0
    for kind, part in parts:
        assert kind in ("set", "run"), kind
        assert (is_valid_set if kind == "set" else is_valid_run)(part), (kind, _cards(part))
        assert union & part == 0, "a card is in two combinations"
        union |= part
    assert union == meld, "split does not cover the meld"
    _split_checked.add(meld)


# ----------------------------------------------------------------------------- invariants


def stock_rest(state: GameState) -> int:
    mask = 0
    for c in state.stock[state.stock_pos :]:
        mask |= 1 << c
    return mask


def check_state(state: GameState) -> None:
    # every card exactly once
    places = [state.hands[0], state.hands[1], state.melds[0], state.melds[1], state.dead, stock_rest(state)]
    if state.face_up >= 0:
        places.append(1 << state.face_up)
    union = 0
    total = 0
    for m in places:
        assert union & m == 0, f"a card is in two places: {state!r}"
        union |= m
        total += m.bit_count()
    assert union == FULL and total == 40, f"cards missing: {state!r}"
    assert len(state.stock) == STOCK_SIZE and len(set(state.stock)) == STOCK_SIZE
    assert 0 <= state.stock_pos <= STOCK_SIZE
    # turned cards are public: dead, melded or face up
    public = state.dead | state.melds[0] | state.melds[1] | (1 << state.face_up if state.face_up >= 0 else 0)
    for c in state.stock[: state.stock_pos]:
        assert public >> c & 1
    # discards and refusals are history of public cards
    for p in (0, 1):
        assert state.discards[p] & state.hands[p] == 0
        assert state.discards[p] & ~public == 0
        assert state.refusals[p] & ~public == 0
        check_meld_splits(state.melds[p])

    # card counts per player
    phase = state.phase
    for p in (0, 1):
        held = state.hands[p].bit_count() + state.melds[p].bit_count()
        if phase == MELD and p == state.player:
            assert held + 1 == 11  # the taken card is still in the middle
        elif phase == DISCARD and p == state.player:
            assert held == 11
        elif phase == GAME_OVER and p == state.winner:
            assert held == 11 and state.hands[p] == 0
        else:
            assert held == 10, f"player {p} holds {held}: {state!r}"

    # phase bookkeeping
    legal = state.legal_actions()
    if phase == GAME_OVER:
        assert legal == [] and state.legal_action_mask() == 0
        assert state.current_player == -1
        assert state.returns() in ((1, -1), (-1, 1), (0, 0))
        if state.winner < 0:
            assert state.returns() == (0, 0) and state.stock_pos == STOCK_SIZE and state.is_draw()
        else:
            assert state.returns() == ((1, -1) if state.winner == 0 else (-1, 1))
    else:
        assert legal, f"no legal action before the end: {state!r}"
        assert state.current_player == state.player in (0, 1)
        assert state.returns() == (0, 0)
    if phase in (OFFER, MELD, FORCE_DECISION):
        assert state.face_up >= 0 and state.source in (TURNED, DISCARDED)
    if phase == DISCARD:
        assert state.face_up == -1
    if phase == MELD:
        assert state.chosen & ~state.hands[state.player] == 0
    else:
        assert state.chosen == 0
    if phase == OFFER:
        assert set(legal) <= {actions.TAKE, actions.REFUSE} and actions.REFUSE in legal
    elif phase == MELD:
        assert all(a < 40 or a == actions.FINISH for a in legal)
    elif phase == DISCARD:
        assert legal == [actions.DISCARD_BASE + c for c in _cards(state.hands[state.player])]
    elif phase == FORCE_DECISION:
        assert state.rules.forcing and legal == [actions.FORCE, actions.NO_FORCE]


def _snapshot(state: GameState) -> tuple:
    return (
        tuple(state.hands),
        tuple(state.melds),
        state.stock,
        state.stock_pos,
        state.dead,
        state.face_up,
        state.source,
        state.owner,
        state.passed,
        state.player,
        state.phase,
        state.chosen,
        tuple(state.discards),
        tuple(state.refusals),
        state.winner,
        state.forced,
        state.rules.forcing,
        state.move_count,
        tuple(state.legal_actions()),
    )


def check_clone(state: GameState, rng: random.Random) -> None:
    before = _snapshot(state)
    copy = state.clone()
    assert _snapshot(copy) == before
    if not copy.is_terminal():
        copy.apply(rng.choice(copy.legal_actions()))
        assert _snapshot(state) == before, "playing on a clone changed the original"
        # and the other way round
        copy2 = state.clone()
        snap2 = _snapshot(copy2)
        probe = state.clone()
        probe.apply(probe.legal_actions()[0])
        assert _snapshot(copy2) == snap2


def check_determinize(state: GameState, player: int, rng: random.Random) -> None:
    before = _snapshot(state)
    d = state.determinize(player, rng)
    assert _snapshot(state) == before, "determinize changed the original"
    opp = 1 - player
    assert d.hands[player] == state.hands[player]
    assert d.melds == state.melds and d.dead == state.dead and d.face_up == state.face_up
    assert d.stock_pos == state.stock_pos and d.stock[: d.stock_pos] == state.stock[: state.stock_pos]
    assert len(d.stock) == STOCK_SIZE
    assert d.hands[opp].bit_count() == state.hands[opp].bit_count()
    assert d.chosen == state.chosen and d.chosen & ~d.hands[state.player] == 0
    for name in ("source", "owner", "passed", "player", "phase", "winner", "forced", "rules", "move_count"):
        assert getattr(d, name) == getattr(state, name), name
    assert d.discards == state.discards and d.refusals == state.refusals
    # only unseen cards move, and they stay unseen
    unseen = state.unseen_cards(player)
    assert d.unseen_cards(player) == unseen
    assert (d.hands[opp] | stock_rest(d)) == (state.hands[opp] | stock_rest(state))
    assert (d.hands[opp] ^ state.hands[opp]) & ~unseen == 0
    check_state(d)
    if state.player == player and not state.is_terminal():
        assert d.legal_actions() == state.legal_actions()
    # the result depends only on what the player knows: same rng seed, same answer
    other = state.determinize(player, random.Random(rng.random()))
    seed = rng.randrange(1 << 30)
    a = state.determinize(player, random.Random(seed))
    b = other.determinize(player, random.Random(seed))
    assert _snapshot(a) == _snapshot(b)


# ----------------------------------------------------------------------------- random games


def _policy(state: GameState, rng: random.Random, take_rate: float) -> int:
    legal = state.legal_actions()
    if actions.TAKE in legal and rng.random() < take_rate:
        return actions.TAKE
    if state.phase == MELD and len(legal) > 1 and rng.random() < 0.7:
        adds = [a for a in legal if a < 40]
        if adds:
            return rng.choice(adds)
    return rng.choice(legal)


def play_checked_games(n_games: int, seed: int, deep_every: int = 7) -> dict[str, int]:
    """Play ``n_games`` random games checking every state; clone/determinize every few steps."""
    rng = random.Random(seed)
    results = {"wins": 0, "draws": 0, "moves": 0}
    for g in range(n_games):
        state = new_game(seed=rng.randrange(1 << 32), first=g % 2, forcing=g % 3 == 0)
        take_rate = (0.3, 0.6, 0.95)[g % 3]
        check_state(state)
        moves = 0
        while not state.is_terminal():
            assert moves < MAX_MOVES, "the game did not end"
            state.apply(_policy(state, rng, take_rate))
            moves += 1
            check_state(state)
            if moves % deep_every == g % deep_every:
                check_clone(state, rng)
                check_determinize(state, rng.randrange(2), rng)
        check_clone(state, rng)
        check_determinize(state, 0, rng)
        assert state.move_count == moves
        results["moves"] += moves
        results["draws" if state.is_draw() else "wins"] += 1
    return results


def test_thousands_of_random_games():
    results = play_checked_games(2500, seed=1)
    # both outcomes happen
    assert results["wins"] > 100 and results["draws"] > 100


@pytest.mark.slow
def test_many_more_random_games():
    results = play_checked_games(20_000, seed=2, deep_every=4)
    assert results["wins"] > 1000 and results["draws"] > 1000


def test_uniform_random_games_end():
    """Uniformly random legal moves (no bias) also always end, with the stock used up on draws."""
    rng = random.Random(5)
    for g in range(300):
        state = new_game(seed=g, forcing=g % 2 == 1)
        moves = 0
        while not state.is_terminal():
            state.apply(rng.choice(state.legal_actions()))
            moves += 1
            assert moves < MAX_MOVES
        check_state(state)


def test_winner_holds_eleven_melded_cards():
    rng = random.Random(11)
    wins = 0
    for g in range(200):
        state = new_game(seed=g)
        while not state.is_terminal():
            state.apply(_policy(state, rng, 0.95))
        if state.winner >= 0:
            wins += 1
            assert state.melds[state.winner].bit_count() == 11
            assert state.hands[state.winner] == 0
            assert state.melds[1 - state.winner].bit_count() + state.hands[1 - state.winner].bit_count() == 10
    assert wins > 20


def test_clone_shares_no_mutable_state():
    state = new_game(seed=3)
    copy = state.clone()
    assert copy.hands is not state.hands and copy.melds is not state.melds
    assert copy.discards is not state.discards and copy.refusals is not state.refusals
    copy.hands[0] = 0
    copy.melds[1] = 7
    assert state.hands[0] != 0 and state.melds[1] == 0


def test_determinize_rejects_bad_player():
    state = new_game(seed=3)
    with pytest.raises(ValueError, match="player"):
        state.determinize(2, random.Random(0))


def test_determinize_with_numpy_generator():
    import numpy as np

    state = new_game(seed=4)
    rng = random.Random(0)
    for _ in range(25):
        state.apply(_policy(state, rng, 0.9))
        if state.is_terminal():
            break
    d = state.determinize(0, np.random.default_rng(1))
    check_determinize(state, 0, rng)
    assert all(isinstance(c, int) for c in d.stock)


def test_determinize_recomputes_legal_actions_of_the_opponent_to_move():
    """Regression: determinize used to copy the cached legal mask of the opponent's real hand."""
    rng = random.Random(0)
    state = new_game(seed=0)
    while not (state.phase == DISCARD and state.player == 1):
        legal = state.legal_actions()
        state.apply(actions.TAKE if actions.TAKE in legal else rng.choice(legal))
    state.legal_actions()  # fill the cache
    for seed in range(20):
        d = state.determinize(0, random.Random(seed))
        assert d.legal_actions() == [actions.DISCARD_BASE + c for c in _cards(d.hands[1])]
        check_state(d)


def test_determinize_while_the_opponent_melds_keeps_the_meld_completable():
    """Regression: the opponent took the face-up card, so a re-dealt hand must still meld it."""
    rng = random.Random(3)
    found = 0
    for seed in range(200):
        state = new_game(seed=seed)
        while not state.is_terminal() and not (state.phase == MELD and state.player == 1):
            legal = state.legal_actions()
            state.apply(actions.TAKE if actions.TAKE in legal and rng.random() < 0.7 else rng.choice(legal))
        if state.is_terminal():
            continue
        found += 1
        for k in range(10):
            d = state.determinize(0, random.Random(k))
            check_state(d)  # includes: legal actions are not empty
            while d.phase == MELD:  # and the meld can be finished
                d.apply(actions.FINISH if actions.FINISH in d.legal_actions() else d.legal_actions()[0])
        if found >= 40:
            break
    assert found >= 40


def test_determinize_is_bounded_in_rare_melding_positions():
    # before: rejection sampling without bound; this position needed up to ~2,700 shuffles
    import random

    from agents.greedy.greedy import GreedyAgent
    from conquian_env.game import MELD, new_game
    from conquian_env.melds import can_extend_to_meld
    from conquian_env.view import PlayerView

    class Counting(random.Random):
        calls = 0

        def shuffle(self, x):
            Counting.calls += 1
            super().shuffle(x)

    state = new_game(seed=330)
    bots = [GreedyAgent(), GreedyAgent()]
    while not (state.phase == MELD and state.move_count == 13):
        state.apply(bots[state.player].choose(PlayerView(state, state.player)))
    melder = state.player
    base = state.melds[melder] | 1 << state.face_up | state.chosen
    for k in range(40):
        Counting.calls = 0
        det = state.determinize(1 - melder, Counting(k))
        assert Counting.calls <= 70, Counting.calls
        hidden = det.hands[melder] & ~state.chosen
        assert can_extend_to_meld(base, hidden), "the sampled hand can finish the meld in progress"
        assert det.hands[1 - melder] == state.hands[1 - melder] and det.melds == state.melds
        assert hidden.bit_count() == (state.hands[melder] & ~state.chosen).bit_count()
        assert sorted(det.stock[det.stock_pos :]) != [] and set(det.stock) | {
            c for c in range(40) if det.hands[melder] >> c & 1
        } == set(state.stock) | {c for c in range(40) if state.hands[melder] >> c & 1}
