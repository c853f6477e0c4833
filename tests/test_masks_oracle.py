"""The engine's legal-action masks against an independent brute-force oracle.

The oracle below is written from RULES.md sections 1, 2 and 8 only; it does not import
``conquian_env.melds`` or ``conquian_env.cards``.  A set of cards is a valid meld when it
can be partitioned into sets (3-4 cards of one rank) and runs (3-8 cards of one suit,
consecutive in ``A 2 3 4 5 6 7 J Q K``): take the lowest card, try every set and every
run that contains it, recurse on the rest.  Legal actions are then found by trying every
subset of the hand.

Checked: ``can_split_into_melds``, ``can_extend_to_meld`` and ``playable_cards`` on random
(required, optional) masks, including set-heavy and run-heavy pools; the exact
``legal_action_mask()`` / ``legal_actions()`` of states reached by random play (with and
without the forcing variant); and that no meld in progress can reach a dead end.
"""

from __future__ import annotations

import random
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conquian_env import actions
from conquian_env.game import DISCARD, FORCE_DECISION, GAME_OVER, MELD, OFFER, new_game
from conquian_env.melds import can_extend_to_meld, can_split_into_melds, playable_cards

# ----------------------------------------------------------------------------- the oracle

ORACLE_RANKS = "A234567JQK"  # sequence order of RULES.md section 1, ace low, no wrap
ORACLE_SUITS = "CDHS"


def oracle_index(text: str) -> int:
    """Card index by RULES.md section 1: suit * 10 + rank."""
    return ORACLE_SUITS.index(text[1]) * 10 + ORACLE_RANKS.index(text[0])


def oracle_mask(text: str) -> int:
    mask = 0
    for word in text.split():
        mask |= 1 << oracle_index(word)
    return mask


def _all_combinations() -> list[int]:
    """Every valid set and run as a bit mask, straight from the definitions."""
    combos = []
    for rank in range(10):
        cards = [suit * 10 + rank for suit in range(4)]
        for size in (3, 4):
            for chosen in _choose(cards, size):
                combos.append(sum(1 << c for c in chosen))
    for suit in range(4):
        for start in range(10):
            for length in range(3, 9):
                if start + length <= 10:
                    combos.append(sum(1 << (suit * 10 + r) for r in range(start, start + length)))
    return combos


def _choose(items: list[int], k: int) -> list[list[int]]:
    if k == 0:
        return [[]]
    if len(items) < k:
        return []
    first, rest = items[0], items[1:]
    return [[first] + c for c in _choose(rest, k - 1)] + _choose(rest, k)


ALL_COMBINATIONS = _all_combinations()
# the combinations containing each card
COMBINATIONS_WITH = [[m for m in ALL_COMBINATIONS if m >> card & 1] for card in range(40)]


@lru_cache(maxsize=1 << 20)
def oracle_valid(cards: int) -> bool:
    """Can ``cards`` be partitioned into valid sets and runs?  (Empty: yes.)"""
    if cards == 0:
        return True
    low = cards & -cards
    card = low.bit_length() - 1
    for combo in COMBINATIONS_WITH[card]:
        if combo & cards == combo and oracle_valid(cards & ~combo):
            return True
    return False


def _subsets(mask: int) -> list[int]:
    out = [0]
    while mask:
        low = mask & -mask
        mask ^= low
        out += [s | low for s in out]
    return out


def oracle_valid_extensions(required: int, optional: int) -> list[int]:
    """Every S subset of optional (minus required) with required | S a valid meld."""
    optional &= ~required
    return [s for s in _subsets(optional) if oracle_valid(required | s)]


def oracle_can_extend(required: int, optional: int) -> bool:
    optional &= ~required
    return any(oracle_valid(required | s) for s in _subsets(optional))


def oracle_playable(required: int, optional: int) -> int:
    out = 0
    for s in oracle_valid_extensions(required, optional):
        out |= s
    return out


def oracle_legal_actions(state) -> set[int]:
    """Legal actions of ``state`` by RULES.md section 8, trying every subset of the hand."""
    if state.phase == GAME_OVER:
        return set()
    p = state.player
    hand = state.hands[p]
    meld = state.melds[p]
    if state.phase == OFFER:
        card = 1 << state.face_up
        take = any(oracle_valid(meld | card | s) for s in _subsets(hand))
        return {actions.REFUSE} | ({actions.TAKE} if take else set())
    if state.phase == MELD:
        base = meld | 1 << state.face_up
        chosen = state.chosen
        assert chosen & hand == chosen
        valid = [s for s in _subsets(hand & ~chosen) if oracle_valid(base | chosen | s)]
        legal = set()
        for h in range(40):
            if hand >> h & 1 and not chosen >> h & 1 and any(s >> h & 1 for s in valid):
                legal.add(actions.MELD_BASE + h)
        if oracle_valid(base | chosen):
            legal.add(actions.FINISH)
        return legal
    if state.phase == DISCARD:
        return {actions.DISCARD_BASE + c for c in range(40) if hand >> c & 1}
    assert state.phase == FORCE_DECISION
    return {actions.FORCE, actions.NO_FORCE}


def _mask_to_set(mask: int) -> set[int]:
    return {i for i in range(mask.bit_length()) if mask >> i & 1}


# ----------------------------------------------------------------------------- oracle self-checks


def test_oracle_card_indexes_follow_the_rule_book():
    assert [oracle_index(t) for t in ("AC", "KC", "AD", "7H", "JS", "KS")] == [0, 9, 10, 26, 37, 39]


@pytest.mark.parametrize(
    "text, valid",
    [
        ("", True),
        ("AC 2C 3C", True),
        ("6S 7S JS", True),  # the 7 is next to the jack
        ("QC KC AC", False),  # no wrap-around
        ("AC AD", False),
        ("AC AD AH", True),
        ("AC AD AH AS", True),
        ("AC 2C 3C 4C 5C 6C 7C JC", True),  # 8-card run
        ("AC 2C 3C 4C 5C 6C 7C JC QC KC", True),  # 10 splits into two runs
        ("AC 2C 3C AD AH", False),
        ("AC 2C 3C AD AH AS", True),
        ("AC 2C AD AH 2D 2H", True),  # AC AD AH + 2C 2D 2H
        ("5S 6S 7S JS JH JD", True),
        ("5S 6S 7S JS JH", False),
    ],
)
def test_oracle_examples(text, valid):
    assert oracle_valid(oracle_mask(text)) is valid
    assert can_split_into_melds(oracle_mask(text)) is valid


# ----------------------------------------------------------------------------- strategies


@st.composite
def card_pools(draw) -> list[int]:
    """A pool of candidate cards: set-heavy (few ranks), run-heavy (few suits) or mixed."""
    kind = draw(st.sampled_from(["sets", "runs", "mixed", "any"]))
    if kind == "sets":
        ranks = draw(st.lists(st.integers(0, 9), min_size=2, max_size=5, unique=True))
        pool = [s * 10 + r for r in ranks for s in range(4)]
    elif kind == "runs":
        suits = draw(st.lists(st.integers(0, 3), min_size=1, max_size=2, unique=True))
        pool = [s * 10 + r for s in suits for r in range(10)]
    elif kind == "mixed":
        ranks = draw(st.lists(st.integers(0, 9), min_size=3, max_size=6, unique=True))
        suits = draw(st.lists(st.integers(0, 3), min_size=2, max_size=4, unique=True))
        pool = [s * 10 + r for s in suits for r in ranks]
    else:
        pool = list(range(40))
    return pool


@st.composite
def required_optional(draw, max_required: int = 12, max_optional: int = 10) -> tuple[int, int]:
    pool = draw(card_pools())
    cards = draw(st.lists(st.sampled_from(pool), unique=True, max_size=max_required + max_optional))
    n_req = draw(st.integers(0, min(len(cards), max_required)))
    required = sum(1 << c for c in cards[:n_req])
    optional = sum(1 << c for c in cards[n_req:][:max_optional])
    # sometimes let optional overlap required (the engine ignores the overlap)
    if draw(st.booleans()):
        optional |= required & draw(st.integers(0, (1 << 40) - 1))
    return required, optional


_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------------------- meld functions


@_SETTINGS
@given(st.data())
def test_can_split_into_melds_matches_oracle(data):
    pool = data.draw(card_pools())
    cards = data.draw(st.lists(st.sampled_from(pool), unique=True, max_size=24))
    mask = sum(1 << c for c in cards)
    assert can_split_into_melds(mask) == oracle_valid(mask), f"mask {mask:#x}"


@_SETTINGS
@given(required_optional())
def test_can_extend_to_meld_matches_oracle(ro):
    required, optional = ro
    assert can_extend_to_meld(required, optional) == oracle_can_extend(required, optional), (
        f"required {required:#x} optional {optional:#x}"
    )


@_SETTINGS
@given(required_optional())
def test_playable_cards_matches_oracle(ro):
    required, optional = ro
    got = playable_cards(required, optional)
    assert got & ~(optional & ~required) == 0
    assert got == oracle_playable(required, optional), f"required {required:#x} optional {optional:#x}"
    # asking twice gives the same answer (memo tables)
    assert playable_cards(required, optional) == got


def test_set_heavy_examples():
    # all four aces, twos and threes: many ways to split
    required = oracle_mask("AC 2D 3H")
    optional = oracle_mask("AD AH AS 2C 2H 2S 3C 3D 3S")
    assert can_extend_to_meld(required, optional)
    assert playable_cards(required, optional) == oracle_playable(required, optional) == optional
    # a rank with only two candidates cannot hold a required card without a run
    assert not can_extend_to_meld(oracle_mask("KC"), oracle_mask("KD QH JS"))
    # 6S 7S JS melded, JH JD in hand, 5S offered: rearrangement (RULES.md section 2)
    assert can_extend_to_meld(oracle_mask("6S 7S JS 5S"), oracle_mask("JH JD"))
    assert playable_cards(oracle_mask("6S 7S JS 5S"), oracle_mask("JH JD KC")) == oracle_mask("JH JD")


# ----------------------------------------------------------------------------- game states


def _check_state(state) -> None:
    expected = oracle_legal_actions(state)
    got = set(state.legal_actions())
    assert got == expected, f"engine {sorted(got)} oracle {sorted(expected)} in {state!r}"
    assert _mask_to_set(state.legal_action_mask()) == expected
    assert state.legal_actions() == sorted(expected)
    for a in range(actions.NUM_ACTIONS):
        assert state.is_legal(a) == (a in expected)


def _random_walk(seed: int, forcing: bool, choices: list[int], check_every: bool = True) -> int:
    """Play with the engine, choosing moves by ``choices``; check every visited state."""
    state = new_game(seed=seed, forcing=forcing)
    steps = 0
    for choice in choices:
        if state.is_terminal():
            break
        if check_every:
            _check_state(state)
        legal = state.legal_actions()
        state.apply(legal[choice % len(legal)])
        if not forcing:
            assert state.phase != FORCE_DECISION
        steps += 1
    _check_state(state)
    return steps


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    forcing=st.booleans(),
    choices=st.lists(st.integers(0, 1000), min_size=20, max_size=150),
)
def test_legal_actions_match_oracle_in_random_play(seed, forcing, choices):
    _random_walk(seed, forcing, choices)


def _greedy_choices(rng: random.Random, n: int) -> list[int]:
    return [rng.randrange(1000) for _ in range(n)]


def test_legal_actions_match_oracle_many_games():
    """Seeded games that favour taking and melding, to reach large melds and empty hands."""
    rng = random.Random(2024)
    checked = 0
    for game_no in range(60):
        state = new_game(seed=game_no, forcing=game_no % 2 == 1)
        take_rate = (0.5, 0.9, 0.98)[game_no % 3]
        while not state.is_terminal():
            _check_state(state)
            checked += 1
            legal = state.legal_actions()
            if actions.TAKE in legal and rng.random() < take_rate:
                action = actions.TAKE
            elif actions.FORCE in legal and rng.random() < 0.7:
                action = actions.FORCE
            elif state.phase == MELD:
                adds = [a for a in legal if a < 40]
                # lay down as much as possible most of the time
                if adds and (rng.random() < 0.85 or actions.FINISH not in legal):
                    action = rng.choice(adds)
                else:
                    action = actions.FINISH
            else:
                action = rng.choice(legal)
            state.apply(action)
        _check_state(state)
    assert checked > 1000


# ----------------------------------------------------------------------------- no dead ends


def _check_no_dead_end(state) -> None:
    """Every chosen-set reachable by legal adds has a legal move, and finishing is reachable."""
    assert state.phase == MELD
    seen = set()
    stack = [state]
    while stack:
        s = stack.pop()
        if s.chosen in seen:
            continue
        seen.add(s.chosen)
        legal = s.legal_actions()
        assert legal, f"dead end: no legal action in {s!r}"
        assert all(a < 40 or a == actions.FINISH for a in legal)
        for a in legal:
            if a == actions.FINISH:
                t = s.clone()
                t.apply(a)
                assert t.phase in (DISCARD, GAME_OVER)
                assert oracle_valid(t.melds[s.player])
            else:
                t = s.clone()
                t.apply(a)
                stack.append(t)
        if len(seen) > 4096:
            break


def _random_legal_walk_finishes(state, rng: random.Random) -> None:
    s = state.clone()
    for _ in range(12):
        legal = s.legal_actions()
        assert legal
        action = rng.choice(legal)
        s.apply(action)
        if action == actions.FINISH:
            assert oracle_valid(s.melds[state.player])
            return
    raise AssertionError(f"random legal walk did not finish from {state!r}")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), forcing=st.booleans(), walk_seed=st.integers(0, 2**16))
def test_no_dead_ends_while_melding(seed, forcing, walk_seed):
    rng = random.Random(walk_seed)
    state = new_game(seed=seed, forcing=forcing)
    melds_checked = 0
    while not state.is_terminal() and melds_checked < 4:
        legal = state.legal_actions()
        if actions.TAKE in legal:
            action = actions.TAKE
        elif actions.FORCE in legal:
            action = actions.FORCE
        else:
            action = rng.choice(legal)
        state.apply(action)
        if state.phase == MELD and state.chosen == 0:
            melds_checked += 1
            _check_no_dead_end(state)
            for _ in range(5):
                _random_legal_walk_finishes(state, rng)


def test_legal_actions_match_oracle_forcing_games():
    """Forcing-variant games that often refuse cards fitting the meld, to reach force decisions."""
    rng = random.Random(77)
    force_states = 0
    forced_melds = 0
    for game_no in range(40):
        state = new_game(seed=10_000 + game_no, forcing=True)
        while not state.is_terminal():
            _check_state(state)
            if state.phase == FORCE_DECISION:
                force_states += 1
                # the refused card fits the refuser's meld without any hand card (RULES.md section 7)
                assert oracle_valid(state.melds[1 - state.player] | 1 << state.face_up)
            if state.phase == MELD and state.forced and state.chosen == 0:
                forced_melds += 1
                assert actions.FINISH in state.legal_actions()
            legal = state.legal_actions()
            if state.phase == OFFER and actions.TAKE in legal:
                action = actions.TAKE if rng.random() < 0.5 else actions.REFUSE
            else:
                action = rng.choice(legal)
            before = state.clone()
            state.apply(action)
            if action == actions.REFUSE:
                fits = oracle_valid(before.melds[before.player] | 1 << before.face_up)
                assert (state.phase == FORCE_DECISION) == fits
        _check_state(state)
    assert force_states > 20
    assert forced_melds > 5


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(required_optional(max_required=14, max_optional=12))
def test_meld_functions_match_oracle_slow(ro):
    required, optional = ro
    assert can_extend_to_meld(required, optional) == oracle_can_extend(required, optional)
    assert playable_cards(required, optional) == oracle_playable(required, optional)
    assert can_split_into_melds(required | optional) == oracle_valid(required | optional)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    forcing=st.booleans(),
    choices=st.lists(st.integers(0, 1000), min_size=50, max_size=200),
)
def test_legal_actions_match_oracle_in_random_play_slow(seed, forcing, choices):
    _random_walk(seed, forcing, choices)
