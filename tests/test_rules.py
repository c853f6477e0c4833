"""One named scenario per rule of ``conquian_env/RULES.md``, played on stacked deals.

Each test builds a deal from the few cards it cares about (:func:`deal` fills the rest of
the 40 cards deterministically, choosing filler cards that connect as little as possible
with the named ones), plays the decisions as text (``"take"``, ``"meld 6S"``,
``"finish"``, ``"discard KC"``...) and checks what is legal, who moves and what happened.
Section 6 (stakes, matches) is tested with the match runner, not here.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import conquian_env
from conquian_env import game
from conquian_env.actions import (
    FORCE,
    NO_FORCE,
    NUM_ACTIONS,
    REFUSE,
    TAKE,
    action_to_str,
    discard_action,
    str_to_action,
)
from conquian_env.cards import CARD_NAMES, FULL_MASK, NUM_CARDS, RANK_MASK, mask_of, parse_card, popcount
from conquian_env.game import (
    DISCARD,
    DISCARDED,
    FORCE_DECISION,
    GAME_OVER,
    MELD,
    OFFER,
    TURNED,
    GameState,
    IllegalActionError,
    new_game,
)
from conquian_env.melds import can_split_into_melds, split_into_melds
from conquian_env.rules import Rules

# --------------------------------------------------------------------------- helpers

RANK_ORDER = "A234567JQK"


def _related(a: int, b: int) -> bool:
    """Two cards that could sit in one three-card set or run together."""
    if a % 10 == b % 10:
        return True
    return a // 10 == b // 10 and abs(a % 10 - b % 10) <= 2


def filled_deal(
    p0: str | Sequence[str] = (),
    p1: str | Sequence[str] = (),
    stock: Sequence[str | None] = (),
) -> tuple[list[list[str]], list[str]]:
    """A full legal deal holding the named cards; the rest is filled deterministically.

    ``p0``/``p1`` name some (or all ten) cards of each hand; ``stock`` names the top
    cards of the stock, top first, where ``None`` marks a slot left to filler.  A hand
    is filled, card by card, with the unused card that has the fewest partners (same
    rank, or same suit within two ranks) among that hand and the named stock cards,
    so fillers rarely make melds; ties go to the lowest card index.
    """
    hands = [[parse_card(c) for c in (h.split() if isinstance(h, str) else h)] for h in (p0, p1)]
    top = [None if c is None else parse_card(c) for c in stock]
    named = [c for h in hands for c in h] + [c for c in top if c is not None]
    if len(set(named)) != len(named):
        raise ValueError("a card is named twice in the stacked deal")
    if any(len(h) > 10 for h in hands) or len(top) > 20:
        raise ValueError("a hand holds 10 cards and the stock 20")
    free = [c for c in range(NUM_CARDS) if c not in named]
    named_stock = [c for c in top if c is not None]
    for hand in hands:
        while len(hand) < 10:
            best = min(free, key=lambda c: (sum(_related(c, d) for d in hand + named_stock), c))
            hand.append(best)
            free.remove(best)
    fill = iter(free)
    full_stock = [next(fill) if c is None else c for c in top]
    full_stock += list(fill)
    return [[CARD_NAMES[c] for c in h] for h in hands], [CARD_NAMES[c] for c in full_stock]


def deal(
    p0: str | Sequence[str] = (),
    p1: str | Sequence[str] = (),
    stock: Sequence[str | None] = (),
    *,
    first: int = 0,
    forcing: bool = False,
) -> GameState:
    """A new game on :func:`filled_deal`."""
    hands, full_stock = filled_deal(p0, p1, stock)
    return new_game(hands=hands, stock=full_stock, first=first, forcing=forcing)


def play(state: GameState, *moves: str) -> GameState:
    """Apply decisions given as text, e.g. ``play(s, "take", "meld 6S", "finish")``."""
    for move in moves:
        state.apply(str_to_action(move))
    return state


def legal(state: GameState) -> set[str]:
    """The legal decisions of the player to move, as text."""
    return {action_to_str(a) for a in state.legal_actions()}


def cards(text: str) -> int:
    return mask_of(text.split())


def melded(state: GameState, player: int) -> set[str]:
    return {CARD_NAMES[c] for c in range(NUM_CARDS) if state.melds[player] >> c & 1}


def is_meld(text: str) -> bool:
    return can_split_into_melds(cards(text))


def offered(state: GameState) -> str:
    return CARD_NAMES[state.face_up]


def refuse_all(state: GameState, n: int) -> GameState:
    for _ in range(n):
        state.apply(REFUSE)
    return state


# --------------------------------------------------------------------------- 1. Cards


def test_ace_is_low_a23_is_a_run_but_not_qka_and_no_wraparound():
    assert is_meld("AH 2H 3H")
    assert is_meld("AH 2H 3H 4H")
    assert not is_meld("QH KH AH")
    assert not is_meld("KH AH 2H")
    assert not is_meld("JH QH KH AH")

    # In play: an offered ace can be taken with 2-3 of its suit, never with Q-K or K-2.
    s = deal(p0="2H 3H", stock=["AH"])
    assert legal(s) == {"take", "refuse"}
    play(s, "take", "meld 2H", "meld 3H", "finish")
    assert melded(s, 0) == {"AH", "2H", "3H"}

    s = deal(p0="QH KH", stock=["AH"])
    assert legal(s) == {"refuse"}
    s = deal(p0="KH 2H", stock=["AH"])
    assert legal(s) == {"refuse"}
    # ... and a king cannot be taken with ace-2 either.
    s = deal(p0="AH 2H", stock=["KH"])
    assert legal(s) == {"refuse"}
    with pytest.raises(IllegalActionError):
        s.apply(TAKE)


def test_seven_is_next_to_jack_and_there_are_no_eights_nines_or_tens():
    assert is_meld("6H 7H JH")
    assert is_meld("7H JH QH")
    assert is_meld("5H 6H 7H JH QH KH")
    assert not is_meld("5H 6H JH")  # the jack follows the 7, not the 6
    assert not is_meld("7H QH KH")
    for text in ("8H", "9H", "10H", "TH"):
        with pytest.raises(ValueError):
            parse_card(text)
    assert RANK_ORDER == "".join(CARD_NAMES[r][0] for r in range(10))

    s = deal(p0="6H 7H", stock=["JH"])
    play(s, "take")
    assert legal(s) == {"meld 6H", "meld 7H"}
    play(s, "meld 6H", "meld 7H", "finish")
    assert melded(s, 0) == {"6H", "7H", "JH"}

    s = deal(p0="JH QH", stock=["7H"])
    play(s, "take", "meld JH", "meld QH", "finish")
    assert melded(s, 0) == {"7H", "JH", "QH"}


# --------------------------------------------------------------------------- 2. Melds


def test_sets_are_three_or_four_cards_of_one_rank():
    assert is_meld("7C 7D 7H")
    assert is_meld("7C 7D 7H 7S")
    assert is_meld("KC KD KS")

    # Take a 7 to make a set of three with two hand cards ...
    s = deal(p0="7C 7D KH", stock=["7H", None, None, "7S"])
    play(s, "take")
    assert legal(s) == {"meld 7C", "meld 7D"}
    play(s, "meld 7C")
    assert "finish" not in legal(s)
    play(s, "meld 7D", "finish", "discard KH")
    assert melded(s, 0) == {"7C", "7D", "7H"}
    # ... and later the fourth 7 alone makes it a set of four.
    refuse_all(s, 1)  # player 1 refuses the KH discard and turns stock[1]
    refuse_all(s, 2)  # stock[1] refused by both: player 0 turns stock[2]
    refuse_all(s, 2)  # stock[2] refused by both: player 1 turns 7S
    assert offered(s) == "7S" and s.player == 1
    refuse_all(s, 1)
    assert s.player == 0 and offered(s) == "7S"
    play(s, "take")
    assert "finish" in legal(s)
    play(s, "finish")
    assert melded(s, 0) == {"7C", "7D", "7H", "7S"}


def test_two_of_a_rank_five_of_a_rank_and_mixed_cards_are_not_sets():
    assert not is_meld("7C 7D")
    assert not is_meld("7C 7D 6C")  # mixed ranks and suits
    assert not is_meld("7C 7D JC")
    assert not is_meld("7C 6D 5H")
    # Five of a rank cannot exist: each rank has exactly four cards, and no card twice.
    assert all(popcount(m) == 4 for m in RANK_MASK)
    with pytest.raises(ValueError):
        mask_of(["7C", "7D", "7H", "7S", "7C"])
    hands, stock = filled_deal()
    hands[0][0] = hands[1][0]
    with pytest.raises(ValueError, match="twice"):
        new_game(hands=hands, stock=stock)

    # In play: a pair in hand makes a set with the third card, never a lone card.
    s = deal(p0="7C 2D", stock=["7H"])
    assert legal(s) == {"refuse"}
    s = deal(p0="7C 6H", stock=["7H"])  # 6H 7H are a run start, 7C 7H a pair: neither melds
    assert legal(s) == {"refuse"}


def test_runs_are_three_to_eight_consecutive_cards_of_one_suit():
    for length in range(3, 9):
        for start in range(0, 11 - length):
            run = " ".join(RANK_ORDER[r] + "D" for r in range(start, start + length))
            assert is_meld(run), run
    assert not is_meld("5D 6D")
    assert not is_meld("4D 5D 7D")  # a gap
    assert not is_meld("5D 6D 7C")  # two suits

    # Take a run of eight: seven hand cards plus the offered jack.
    s = deal(p0="AD 2D 3D 4D 5D 6D 7D", stock=["JD"])
    play(s, "take", *(f"meld {r}D" for r in "A234567"), "finish")
    assert melded(s, 0) == {f"{r}D" for r in "A234567J"}
    assert s.phase == DISCARD and popcount(s.hands[0]) == 3


def test_run_of_nine_or_ten_is_accepted_because_it_splits_into_two_runs():
    nine = "AS 2S 3S 4S 5S 6S 7S JS QS"
    ten = nine + " KS"
    assert is_meld(nine) and is_meld(ten)
    for text in (nine, ten):
        parts = split_into_melds(cards(text))
        assert len(parts) == 2 and all(kind == "run" and 3 <= popcount(m) <= 8 for kind, m in parts)
        assert parts[0][1] | parts[1][1] == cards(text)

    # Ten hearts in one take: nine from the hand and the offered king.
    s = deal(p0="AH 2H 3H 4H 5H 6H 7H JH QH", stock=["KH"])
    play(s, "take", *(f"meld {r}H" for r in "A234567JQ"), "finish")
    assert popcount(s.melds[0]) == 10 and s.phase == DISCARD


def test_no_card_is_in_two_combinations_at_once():
    assert not is_meld("5S 6S 7S 7C 7D")  # 7S cannot be in the run and in the set
    assert is_meld("5S 6S 7S 7C 7D 7H")
    s = deal(p0="5S 6S 7C", stock=["7S"])
    play(s, "take")
    assert legal(s) == {"meld 5S", "meld 6S"}  # 7C would need 7S in the set and in the run


def test_rearrangement_example_of_the_rule_book():
    # Player 0 melds 6S 7S JS by taking JS, keeps JH JD in hand, discards KC.
    s = deal(p0="6S 7S JH JD KC", stock=["JS", "5S"])
    play(s, "take")
    assert legal(s) == {"meld 6S", "meld 7S", "meld JH", "meld JD"}
    play(s, "meld 6S", "meld 7S", "finish", "discard KC")
    assert melded(s, 0) == {"6S", "7S", "JS"}
    # Player 1 refuses the discard, turns 5S and refuses it: it is offered to player 0.
    play(s, "refuse")
    assert offered(s) == "5S" and s.player == 1
    play(s, "refuse")
    assert offered(s) == "5S" and s.player == 0
    assert legal(s) == {"take", "refuse"}
    play(s, "take")
    # JH joins only if JS leaves the run for a set: the rearrangement is legal.
    assert legal(s) == {"finish", "meld JH", "meld JD"}
    play(s, "meld JH")
    assert legal(s) == {"meld JD"}  # 5S 6S 7S JS JH does not split; the set needs JD
    play(s, "meld JD")
    assert legal(s) == {"finish"}
    play(s, "finish")
    assert melded(s, 0) == {"5S", "6S", "7S", "JS", "JH", "JD"}
    parts = sorted((kind, m) for kind, m in split_into_melds(s.melds[0]))
    assert parts == sorted([("run", cards("5S 6S 7S")), ("set", cards("JS JH JD"))])
    assert s.phase == DISCARD and s.hands[0] & s.melds[0] == 0


def test_melded_cards_never_leave_the_table():
    s = deal(p0="6S 7S JH JD KC", stock=["JS", "5S"])
    play(s, "take", "meld 6S", "meld 7S", "finish")
    before = s.melds[0]
    play(s, "discard KC", "refuse", "refuse", "take", "meld JH", "meld JD", "finish")
    assert s.melds[0] & before == before
    assert all(not (s.hands[0] >> c & 1) for c in range(NUM_CARDS) if before >> c & 1)


# --------------------------------------------------------------------------- 3. Deal


@pytest.mark.parametrize("first", [0, 1])
def test_deal_ten_cards_each_twenty_in_stock_and_non_dealer_is_offered_the_top_card(first):
    for s in (new_game(seed=3, first=first), deal(first=first)):
        assert popcount(s.hands[0]) == 10 and popcount(s.hands[1]) == 10
        assert len(s.stock) == 20
        stock_mask = sum(1 << c for c in s.stock)
        assert popcount(stock_mask) == 20
        assert s.hands[0] | s.hands[1] | stock_mask == FULL_MASK
        assert s.hands[0] & s.hands[1] == 0 and (s.hands[0] | s.hands[1]) & stock_mask == 0
        assert s.melds == [0, 0] and s.dead == 0
        # The first decision: the top stock card is turned by and offered to the first player.
        assert s.phase == OFFER and s.player == first and s.current_player == first
        assert s.face_up == s.stock[0] and s.source == TURNED and s.owner == first
        assert s.stock_left == 19
        assert set(s.legal_actions()) <= {TAKE, REFUSE}

    hands, stock = filled_deal()
    e = conquian_env.env()
    e.reset(options={"hands": hands, "stock": stock, "first": first})
    assert e.agent_selection == f"player_{first}"
    assert e.unwrapped.game.face_up == parse_card(stock[0])
    assert e.unwrapped.game.stock_left == 19


def test_default_first_player_is_player_0():
    assert new_game(seed=1).player == 0
    e = conquian_env.env()
    e.reset(seed=1)
    assert e.agent_selection == "player_0"


# --------------------------------------------------------------------------- 4. Play


def test_turned_card_first_refusal_to_turner_then_opponent_then_dead_pile():
    s = deal(stock=["KH", "QC", "5D"])
    assert offered(s) == "KH" and s.player == 0 and s.owner == 0 and s.source == TURNED
    play(s, "refuse")  # the turner refuses: the same card is offered to the opponent
    assert offered(s) == "KH" and s.player == 1 and s.phase == OFFER
    assert s.dead == 0 and s.stock_left == 19
    play(s, "refuse")  # refused twice: dead, and the second refuser turns the next card
    assert s.dead == cards("KH")
    assert offered(s) == "QC" and s.player == 1 and s.owner == 1 and s.source == TURNED
    assert s.stock_left == 18
    play(s, "refuse")  # player 1 had the first refusal of QC: it goes to player 0
    assert offered(s) == "QC" and s.player == 0
    play(s, "refuse")
    assert s.dead == cards("KH QC")
    assert offered(s) == "5D" and s.player == 0 and s.stock_left == 17


def test_opponent_may_take_a_turned_card_the_turner_refused():
    s = deal(p1="2C 3C", stock=["AC"])
    play(s, "refuse")
    assert s.player == 1 and legal(s) == {"take", "refuse"}
    play(s, "take", "meld 2C", "meld 3C", "finish")
    assert melded(s, 1) == {"AC", "2C", "3C"} and s.phase == DISCARD and s.player == 1


def test_discard_is_offered_to_the_opponent_and_a_refused_discard_goes_dead():
    s = deal(p0="2C 3C KH", stock=["AC", "QD", "5S"])
    play(s, "take", "meld 2C", "meld 3C", "finish", "discard KH")
    assert offered(s) == "KH" and s.source == DISCARDED and s.owner == 0
    assert s.player == 1 and s.phase == OFFER
    play(s, "refuse")  # refused discard: dead at once, never back to the discarder
    assert s.dead == cards("KH")
    assert offered(s) == "QD" and s.player == 1 and s.owner == 1 and s.source == TURNED
    assert s.stock_left == 18
    play(s, "refuse")  # player 1 turned QD, so player 0 gets it after them
    assert offered(s) == "QD" and s.player == 0


def test_card_that_cannot_be_melded_cannot_be_taken():
    s = deal(p0="QH KD", stock=["KH"])  # Q-K needs J or the ace wraps; K-K is only a pair
    assert legal(s) == {"refuse"}
    with pytest.raises(IllegalActionError):
        s.apply(TAKE)
    assert s.phase == OFFER and offered(s) == "KH"  # the failed take changed nothing
    s = deal(p0="QH KD JH", stock=["KH"])
    assert legal(s) == {"take", "refuse"}


def test_card_in_the_middle_never_enters_the_hand():
    s = deal(p0="2C 3C", stock=["AC", "KH"])
    hand_before = s.hands[0]
    play(s, "take")
    assert s.hands[0] == hand_before  # taking starts a meld, the card is not in the hand
    play(s, "meld 2C", "meld 3C", "finish")
    assert s.melds[0] & cards("AC") and not s.hands[0] & cards("AC")
    # A refused card goes to no hand either.
    s = deal(stock=["KH"])
    hands_before = list(s.hands)
    play(s, "refuse", "refuse")
    assert s.hands == hands_before and s.dead == cards("KH")


def test_hand_cards_are_laid_only_in_the_same_move_as_a_take():
    # AC 2C 3C in hand are a meld, but they can be laid only while taking a card.
    s = deal(p0="AC 2C 3C KH", stock=["QS", "6H", "5H"])
    assert legal(s) == {"refuse"}
    for card in ("AC", "2C", "3C"):
        with pytest.raises(IllegalActionError):
            play(s, f"meld {card}")
    play(s, "refuse", "refuse")  # QS dead, player 1 turns 6H
    play(s, "refuse")
    assert offered(s) == "6H" and s.player == 0
    assert legal(s) == {"refuse"}
    play(s, "refuse")  # 6H dead, player 0 turns 5H ... which melds with nothing either
    assert offered(s) == "5H"
    assert legal(s) == {"refuse"}
    assert melded(s, 0) == set() and popcount(s.hands[0]) == 10


def test_discard_phase_allows_only_discards_of_hand_cards():
    s = deal(p0="AC 2C 3C 4D 5D 6D", stock=["7D"])
    play(s, "take", "meld 4D", "meld 5D", "meld 6D", "finish")
    assert s.phase == DISCARD
    assert legal(s) == {f"discard {CARD_NAMES[c]}" for c in range(NUM_CARDS) if s.hands[0] >> c & 1}
    with pytest.raises(IllegalActionError):
        play(s, "meld AC")


def test_meld_choices_are_exact_and_finish_needs_a_valid_meld():
    # Hand 5H 6H KC, offered 7H: KC can never join, 5H and 6H can, finish needs both.
    s = deal(p0="5H 6H KC", stock=["7H"])
    assert legal(s) == {"take", "refuse"}
    play(s, "take")
    assert s.phase == MELD and s.player == 0
    assert legal(s) == {"meld 5H", "meld 6H"}
    with pytest.raises(IllegalActionError):
        play(s, "meld KC")
    with pytest.raises(IllegalActionError):
        play(s, "finish")
    play(s, "meld 5H")
    assert legal(s) == {"meld 6H"}
    play(s, "meld 6H")
    assert legal(s) == {"finish"}
    play(s, "finish")
    assert melded(s, 0) == {"5H", "6H", "7H"}
    assert s.phase == DISCARD and s.hands[0] & cards("KC")


def test_take_may_add_none_some_or_all_hand_cards():
    # 4H extends the run 5H 6H 7H alone; 3H 2H from the hand may come along, or not.
    base = dict(p0="5H 6H 2H 3H", stock=["7H", "4H"])
    for extra, expected in (((), "4H"), (("3H",), "3H 4H"), (("2H", "3H"), "2H 3H 4H")):
        s = deal(**base)
        play(s, "take", "meld 5H", "meld 6H", "finish")
        discard = next(c for c in range(NUM_CARDS) if s.hands[0] >> c & 1 and not cards("2H 3H") >> c & 1)
        s.apply(discard_action(discard))
        play(s, "refuse", "refuse")  # player 1 refuses the discard, turns 4H and refuses it
        assert offered(s) == "4H" and s.player == 0
        play(s, "take")
        assert legal(s) == {"finish", "meld 2H", "meld 3H"}
        for card in extra:
            play(s, f"meld {card}")
        assert "finish" in legal(s)
        play(s, "finish")
        assert melded(s, 0) == {"5H", "6H", "7H"} | set(expected.split())


def test_ten_melded_player_holds_nothing_and_can_only_take_a_card_that_goes_out():
    s = deal(p0="AC AD 2S 3S 4S 5S 6S 7S JS KD", stock=["AH", "5C", "KH", "2D", "7C", "QS"])
    play(s, "take", "meld AC", "meld AD", *(f"meld {r}S" for r in "234567J"), "finish")
    assert popcount(s.melds[0]) == 10 and s.winner == -1  # ten melded does not win
    assert legal(s) == {"discard KD"}
    play(s, "discard KD")
    assert s.hands[0] == 0 and popcount(s.melds[0]) == 10 and not s.is_terminal()
    play(s, "refuse", "refuse")  # player 1 refuses KD, turns 5C and refuses it
    # 5C and 2D reach player 0 after player 1 refused them; player 0 turns KH and 7C.
    three_refusals = ["refuse", "refuse", "refuse"]  # player 0, then player 1 twice (kill, turn+refuse)
    waiting_offers = [("5C", ["refuse"]), ("KH", three_refusals), ("2D", ["refuse"]), ("7C", three_refusals)]
    for card, moves in waiting_offers:
        assert offered(s) == card and s.player == 0
        assert legal(s) == {"refuse"}  # nothing to meld it with, and it does not fit alone
        play(s, *moves)
    assert offered(s) == "QS" and s.player == 0
    assert legal(s) == {"take", "refuse"}
    play(s, "take")
    assert legal(s) == {"finish"}
    play(s, "finish")
    assert s.is_terminal() and s.winner == 0 and popcount(s.melds[0]) == 11
    assert s.returns() == (1, -1)


def test_waiting_player_can_go_out_with_the_fourth_card_of_a_set():
    s = deal(p0="AC AD 2S 3S 4S 5S 6S 7S JS KD", stock=["AH", "AS"])
    play(s, "take", "meld AC", "meld AD", *(f"meld {r}S" for r in "234567J"), "finish", "discard KD")
    play(s, "refuse", "refuse")  # player 1: KD refused, AS turned and refused
    assert offered(s) == "AS" and s.player == 0 and legal(s) == {"take", "refuse"}
    play(s, "take", "finish")
    assert s.winner == 0


# --------------------------------------------------------------------------- 5. End of the game

WINNING_HAND = "AC 2C 3C 4C AD 2D 3D AH 2H 3H"  # with 4H: eleven cards in three runs


def _go_out(s: GameState, player: int) -> None:
    assert s.player == player and offered(s) == "4H"
    play(s, "take")
    for card in WINNING_HAND.split():
        play(s, f"meld {card}")
    play(s, "finish")


def _won_by_player_0(s: GameState) -> None:
    assert s.is_terminal() and s.phase == GAME_OVER
    assert s.winner == 0 and s.hands[0] == 0 and popcount(s.melds[0]) == 11
    assert s.returns() == (1, -1)
    assert s.current_player == -1 and s.legal_actions() == []
    with pytest.raises(IllegalActionError):
        s.apply(REFUSE)


def test_going_out_with_a_card_the_player_turned():
    s = deal(p0=WINNING_HAND, stock=["4H"])
    _go_out(s, 0)
    _won_by_player_0(s)


def test_going_out_with_a_card_the_opponent_turned_and_refused():
    s = deal(p0=WINNING_HAND, stock=["4H"], first=1)
    assert s.player == 1
    play(s, "refuse")
    _go_out(s, 0)
    _won_by_player_0(s)


def test_going_out_with_a_card_the_opponent_discarded():
    s = deal(p0=WINNING_HAND, p1="JS QS 4H", stock=["KS"], first=1)
    play(s, "take", "meld JS", "meld QS", "finish", "discard 4H")
    _go_out(s, 0)
    _won_by_player_0(s)


def test_finishing_with_cards_left_is_not_going_out():
    s = deal(p0=WINNING_HAND, stock=["4H"])
    play(s, "take", "meld AH", "meld 2H", "meld 3H")
    assert "finish" in legal(s)
    play(s, "finish")
    assert s.phase == DISCARD and s.winner == -1 and popcount(s.hands[0]) == 7


def test_going_out_through_the_env_gives_plus_one_minus_one():
    hands, stock = filled_deal(p0=WINNING_HAND, stock=["4H"])
    e = conquian_env.env()
    e.reset(options={"hands": hands, "stock": stock, "first": 1})
    assert e.agent_selection == "player_1"
    e.step(REFUSE)
    assert e.agent_selection == "player_0"
    for move in ["take", *(f"meld {c}" for c in WINNING_HAND.split()), "finish"]:
        e.step(str_to_action(move))
    assert e.rewards == {"player_0": 1, "player_1": -1}
    assert all(e.terminations.values())
    assert e.infos["player_0"]["result"] == "win" and e.infos["player_1"]["result"] == "loss"
    assert e.infos["player_0"]["winner"] == "player_0" == e.infos["player_1"]["winner"]
    _, reward, termination, _, info = e.last()
    assert termination and reward == e.rewards[e.agent_selection]


def test_draw_when_last_turned_card_is_refused_by_both_players():
    s = deal(stock=[None] * 19 + ["KH"])
    refuse_all(s, 38)  # 19 stock cards turned and refused twice each
    assert s.stock_left == 0 and offered(s) == "KH" and s.owner == 1 and s.player == 1
    play(s, "refuse")  # the turner refuses the last card: it passes, no draw yet
    assert not s.is_terminal() and s.player == 0 and offered(s) == "KH"
    play(s, "refuse")  # player 0 would have to turn a card from the empty stock: draw
    assert s.is_terminal() and s.is_draw() and s.winner == -1
    assert s.returns() == (0, 0)
    assert s.dead == sum(1 << c for c in s.stock)
    assert s.legal_actions() == []


def test_draw_when_a_refused_discard_needs_a_card_from_the_empty_stock():
    s = deal(p0="2S 3S KD", stock=[None] * 19 + ["4S"])
    refuse_all(s, 39)  # player 1 turns 4S last and refuses it
    assert s.stock_left == 0 and offered(s) == "4S" and s.player == 0
    play(s, "take", "meld 2S", "meld 3S", "finish", "discard KD")
    assert not s.is_terminal() and s.player == 1 and offered(s) == "KD"
    play(s, "refuse")
    assert s.is_draw() and s.returns() == (0, 0)


def test_draw_through_the_env_gives_zero_rewards():
    hands, stock = filled_deal()
    e = conquian_env.env()
    e.reset(options={"hands": hands, "stock": stock})
    for _ in range(40):
        assert not any(e.terminations.values())
        e.step(REFUSE)
    assert all(e.terminations.values())
    assert e.rewards == {"player_0": 0, "player_1": 0}
    assert e.infos["player_0"]["result"] == "draw" and e.infos["player_0"]["winner"] is None


def test_game_always_ends():
    # Every refusal uses a stock card or kills one; every take adds a card to a meld.
    for seed in range(10):
        s = new_game(seed=seed)
        for _ in range(400):
            if s.is_terminal():
                break
            actions = s.legal_actions()
            s.apply(actions[(seed + s.move_count) % len(actions)])
        assert s.is_terminal()


# --------------------------------------------------------------------------- 7. Forcing

# Player 0 melds 2S 3S 4S, discards KC; player 1 refuses it and turns KH, which player 0
# could take with JH QH but which does not fit their meld alone; player 0 then turns 5S,
# which fits the meld 2S 3S 4S with no hand card.
FORCE_P0 = "2S 3S 6S JH QH KC"
FORCE_STOCK = ["4S", "KH", "5S", "AD"]


def _to_five_spades(forcing: bool) -> GameState:
    s = deal(p0=FORCE_P0, stock=FORCE_STOCK, forcing=forcing)
    play(s, "take", "meld 2S", "meld 3S", "finish", "discard KC")
    play(s, "refuse")  # player 1 refuses KC (their meld is empty: nothing to force), turns KH
    play(s, "refuse")
    assert offered(s) == "KH" and s.player == 0 and legal(s) == {"take", "refuse"}
    play(s, "refuse")  # KH fits only with hand cards: never a force decision
    assert s.phase == OFFER and offered(s) == "5S" and s.player == 0 and s.owner == 0
    return s


def test_forcing_off_never_offers_the_force_decision():
    s = _to_five_spades(forcing=False)
    play(s, "refuse")  # 5S fits 2S 3S 4S, but forcing is off: a plain refusal
    assert s.phase == OFFER and s.player == 1 and offered(s) == "5S"
    # Over whole games without forcing, FORCE and NO_FORCE are never legal.
    for seed in range(5):
        g = new_game(seed=seed)
        while not g.is_terminal():
            acts = g.legal_actions()
            assert FORCE not in acts and NO_FORCE not in acts
            g.apply(REFUSE if REFUSE in acts else acts[-1])


def test_forcing_on_refusing_a_card_that_fits_the_meld_lets_opponent_decide():
    s = _to_five_spades(forcing=True)
    play(s, "refuse")
    assert s.phase == FORCE_DECISION and s.player == 1
    assert legal(s) == {"force", "no force"}
    assert offered(s) == "5S"


def test_forcing_on_force_makes_the_refuser_take_and_discard():
    s = _to_five_spades(forcing=True)
    play(s, "refuse", "force")
    assert s.phase == MELD and s.player == 0 and offered(s) == "5S"
    assert legal(s) == {"finish", "meld 6S"}  # fits alone; hand cards may come along
    play(s, "meld 6S", "finish")
    assert melded(s, 0) == {"2S", "3S", "4S", "5S", "6S"}
    assert s.phase == DISCARD and s.player == 0
    play(s, "discard JH")
    assert s.phase == OFFER and s.player == 1 and offered(s) == "JH" and s.source == DISCARDED


def test_forcing_on_no_force_continues_as_a_normal_refusal():
    # 5S was turned by player 0: after "no force" it is offered to player 1.
    s = _to_five_spades(forcing=True)
    play(s, "refuse", "no force")
    assert s.phase == OFFER and s.player == 1 and offered(s) == "5S" and s.dead & cards("5S") == 0
    # Refused by player 1 too (their meld is empty: no force), it goes dead and they turn AD.
    play(s, "refuse")
    assert s.dead & cards("5S") and offered(s) == "AD" and s.player == 1


def test_forcing_on_no_force_on_a_passed_card_sends_it_dead():
    # Player 1 turns 5S and refuses it; player 0 refuses it too: force decision for player 1.
    s = deal(p0="2S 3S KC", stock=["4S", "5S", "AD"], forcing=True)
    play(s, "take", "meld 2S", "meld 3S", "finish", "discard KC", "refuse")
    assert offered(s) == "5S" and s.player == 1
    play(s, "refuse")
    assert s.player == 0 and s.phase == OFFER
    play(s, "refuse")
    assert s.phase == FORCE_DECISION and s.player == 1
    play(s, "no force")
    assert s.dead & cards("5S") and offered(s) == "AD" and s.player == 0 and s.owner == 0


def test_no_force_decision_when_the_card_fits_only_with_hand_cards():
    s = deal(p0="6H 7H", stock=["JH"], forcing=True)
    play(s, "refuse")
    assert s.phase == OFFER and s.player == 1  # player 0's meld is empty: nothing to force
    s = deal(p0="2S 3S 6H 7H KC", stock=["4S", "JH"], forcing=True)
    play(s, "take", "meld 2S", "meld 3S", "finish", "discard KC", "refuse", "refuse")
    assert offered(s) == "JH" and s.player == 0 and legal(s) == {"take", "refuse"}
    play(s, "refuse")
    assert s.phase == OFFER and s.dead & cards("JH") and s.player == 0


def test_forced_eleventh_card_wins_for_the_forced_player():
    s = deal(p0="AC AD 2S 3S 4S 5S 6S 7S JS KD", stock=["AH", "5C", "QS"], forcing=True)
    play(s, "take", "meld AC", "meld AD", *(f"meld {r}S" for r in "234567J"), "finish", "discard KD")
    play(s, "refuse", "refuse")  # player 1: KD refused, 5C turned and refused
    play(s, "refuse")  # player 0 refuses 5C: it does not fit, no force; they turn QS
    assert offered(s) == "QS" and s.player == 0
    play(s, "refuse")
    assert s.phase == FORCE_DECISION and s.player == 1
    play(s, "force")
    assert s.phase == MELD and legal(s) == {"finish"}
    play(s, "finish")
    assert s.winner == 0 and s.returns() == (1, -1)


def test_forcing_through_the_env():
    hands, stock = filled_deal(p0=FORCE_P0, stock=FORCE_STOCK)
    moves = ["take", "meld 2S", "meld 3S", "finish", "discard KC", "refuse", "refuse", "refuse", "refuse"]
    e = conquian_env.env(forcing=True)
    e.reset(options={"hands": hands, "stock": stock})
    for move in moves:
        e.step(str_to_action(move))
    assert e.agent_selection == "player_1"
    mask = e.observe("player_1")["action_mask"]
    assert [a for a in range(NUM_ACTIONS) if mask[a]] == [FORCE, NO_FORCE]

    e = conquian_env.env()
    e.reset(options={"hands": hands, "stock": stock})
    for move in moves:
        e.step(str_to_action(move))
    assert e.agent_selection == "player_1" and e.unwrapped.game.phase == OFFER
    assert not e.observe("player_1")["action_mask"][FORCE]


def test_forcing_on_force_decision_comes_before_the_draw_on_an_empty_stock():
    for decision in ("no force", "force"):
        s = deal(p0="2S 3S KC", p1="AS", stock=["4S"] + [None] * 18 + ["5S"], forcing=True)
        play(s, "take", "meld 2S", "meld 3S", "finish", "discard KC")
        refuse_all(s, 37)  # KC killed; stock cards 1..18 refused twice each; player 1 turns 5S
        assert offered(s) == "5S" and s.player == 1 and s.stock_left == 0
        play(s, "refuse", "refuse")  # player 0's refusal would need a new card: force first
        assert s.phase == FORCE_DECISION and s.player == 1 and not s.is_terminal()
        play(s, decision)
        if decision == "no force":
            assert s.is_draw() and s.returns() == (0, 0)
        else:
            assert s.phase == MELD and s.player == 0
            play(s, "finish")
            hand = [c for c in range(NUM_CARDS) if s.hands[0] >> c & 1]
            s.apply(discard_action(hand[0]))
            play(s, "refuse")  # player 1 refuses the discard: no card to turn, draw
            assert s.is_draw()


# --------------------------------------------------------------------------- the state's fields
# Not a rule: GameState's fields are listed once (conquian_env.game.FIELDS), and its slots,
# clone(), the batched engine's rows (tests/test_vector.py) and the replay page's states
# are built from that list.

_KIND_TYPE = {game.MASK: int, game.INT: int, game.BOOL: bool, game.PAIR: list, game.STOCK: tuple, game.RULES: Rules}


def _field_positions():
    s = deal(p0="2S 3S KC", p1="AS", stock=["4S"], forcing=True)
    yield s.clone()
    play(s, "take", "meld 2S")
    yield s.clone()  # in the middle of a meld: chosen cards
    play(s, "meld 3S", "finish")
    yield s.clone()
    play(s, "discard KC", "refuse")
    yield s.clone()  # refusals, discards, the dead pile


def test_the_field_table_lists_every_field_of_a_game_state():
    names = [f.name for f in game.FIELDS]
    assert len(set(names)) == len(names)
    assert GameState.__slots__ == (*names, "_mask")
    assert list(GameState.__annotations__) == sorted(GameState.__annotations__, key=[*names, "_mask"].index)
    assert set(GameState.__annotations__) == {*names, "_mask"}
    assert {f.kind for f in game.FIELDS} == set(game.FIELD_WIDTH) == set(_KIND_TYPE)
    for s in _field_positions():
        for f in game.FIELDS:
            value = getattr(s, f.name)
            assert type(value) is _KIND_TYPE[f.kind], f.name
            if f.kind in (game.PAIR, game.STOCK):
                assert len(value) == game.FIELD_WIDTH[f.kind], f.name


def test_clone_copies_every_field_and_shares_no_list():
    for s in _field_positions():
        c = s.clone()
        for f in game.FIELDS:
            assert getattr(c, f.name) == getattr(s, f.name), f.name
            if f.kind == game.PAIR:
                assert getattr(c, f.name) is not getattr(s, f.name), f.name
        assert c._mask == s._mask
        c.hands[0] = c.melds[1] = c.discards[0] = c.refusals[1] = 0
        assert s.to_dict() == s.clone().to_dict() != c.to_dict()


def test_the_replay_page_state_is_the_table_fields_with_a_short_name():
    from conquian_arena.pages import state_row
    from conquian_env.render import meld_groups

    for s in _field_positions():
        row = state_row(s)
        assert set(row) == {f.short for f in game.FIELDS if f.short is not None}
        assert row == {
            "h": s.hands,
            "m": [meld_groups(s.melds[0]), meld_groups(s.melds[1])],
            "c": s.chosen,
            "d": s.dead,
            "f": s.face_up,
            "src": s.source,
            "o": s.owner,
            "p": int(s.passed),
            "k": s.stock_left,
            "t": s.player,
            "ph": s.phase,
            "w": s.winner,
        }
        assert type(row["p"]) is int and type(row["h"]) is list
