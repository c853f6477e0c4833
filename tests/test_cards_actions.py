"""Card indexes and text (RULES.md section 1) and the 85 action ids and their text."""

from __future__ import annotations

import pytest

from conquian_env.actions import (
    DISCARD_BASE,
    FINISH,
    FORCE,
    MELD_BASE,
    NO_FORCE,
    NUM_ACTIONS,
    REFUSE,
    TAKE,
    action_to_str,
    discard_action,
    meld_action,
    str_to_action,
)
from conquian_env.cards import (
    CARD_NAMES,
    NUM_CARDS,
    card_str,
    cards_of,
    cards_str,
    mask_of,
    parse_card,
    parse_cards,
    rank_of,
    suit_of,
)

# --------------------------------------------------------------------------- cards


def test_card_indexes_of_the_rule_book_examples():
    examples = {"AC": 0, "KC": 9, "AD": 10, "7H": 26, "JS": 37, "KS": 39}
    for text, index in examples.items():
        assert parse_card(text) == index
        assert card_str(index) == text


def test_card_index_is_suit_times_ten_plus_rank():
    assert NUM_CARDS == 40 and len(CARD_NAMES) == 40
    for s, suit in enumerate("CDHS"):
        for r, rank in enumerate("A234567JQK"):
            card = s * 10 + r
            assert CARD_NAMES[card] == rank + suit
            assert rank_of(card) == r and suit_of(card) == s


def test_all_forty_cards_round_trip_through_text():
    for card in range(NUM_CARDS):
        text = card_str(card)
        assert parse_card(text) == card
        assert parse_card(text.lower()) == card
        assert parse_card(card) == card
    assert len(set(CARD_NAMES)) == 40


def test_masks_and_card_lists_round_trip():
    mask = mask_of("AC 7H JS KS")
    assert cards_of(mask) == [0, 26, 37, 39]
    assert cards_str(mask) == "AC 7H JS KS"
    assert parse_cards("AC, 7H JS") == [0, 26, 37]
    with pytest.raises(ValueError, match="7H"):
        mask_of(["7H", "7H"])


@pytest.mark.parametrize("text", ["8H", "9S", "10H", "TD", "1C", "AX", "7", "ZZ", ""])
def test_unknown_card_text_is_an_error_naming_the_card(text):
    with pytest.raises(ValueError) as err:
        parse_card(text)
    assert repr(text) in str(err.value)


@pytest.mark.parametrize("index", [-1, 40, 100])
def test_card_index_out_of_range_is_an_error(index):
    with pytest.raises(ValueError, match=str(index)):
        parse_card(index)
    with pytest.raises(ValueError):
        card_str(index)


def test_bool_is_not_a_card():
    with pytest.raises(ValueError):
        parse_card(True)
    with pytest.raises(ValueError):
        card_str(True)


# --------------------------------------------------------------------------- actions


def test_action_id_layout():
    assert NUM_ACTIONS == 85
    assert (MELD_BASE, DISCARD_BASE) == (0, 40)
    assert (TAKE, REFUSE, FINISH, FORCE, NO_FORCE) == (80, 81, 82, 83, 84)
    assert meld_action(parse_card("7H")) == 26
    assert discard_action(parse_card("7H")) == 66
    assert action_to_str(26) == "meld 7H" and action_to_str(66) == "discard 7H"
    named = {TAKE: "take", REFUSE: "refuse", FINISH: "finish", FORCE: "force", NO_FORCE: "no force"}
    for action, text in named.items():
        assert action_to_str(action) == text


def test_all_85_actions_round_trip_through_text():
    texts = [action_to_str(a) for a in range(NUM_ACTIONS)]
    assert len(set(texts)) == NUM_ACTIONS
    for action, text in enumerate(texts):
        assert str_to_action(text) == action
        assert str_to_action(text.upper()) == action
        assert str_to_action("  " + text.replace(" ", "   ") + " ") == action


def test_action_text_aliases():
    for alias in ("no-force", "noforce", "pass", "No Force"):
        assert str_to_action(alias) == NO_FORCE
    assert str_to_action("meld 7h") == 26
    assert str_to_action("Discard ks") == 79


@pytest.mark.parametrize(
    "text",
    ["", "jump", "meld", "discard", "meld 8H", "discard 10S", "meld 7X", "take 7H", "meld 7H 7S", "forced"],
)
def test_bad_action_text_raises_value_error(text):
    with pytest.raises(ValueError):
        str_to_action(text)


def test_bad_card_in_action_text_names_the_card():
    with pytest.raises(ValueError, match="8H"):
        str_to_action("meld 8H")


@pytest.mark.parametrize("action", [-1, 85, 1000])
def test_unknown_action_id_raises_value_error(action):
    with pytest.raises(ValueError, match=str(action)):
        action_to_str(action)
