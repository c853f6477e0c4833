"""A rule-based Conquian bot: the "simple" baseline of rummy research, made careful.

``GreedyAgent`` looks one move ahead with a hand evaluation and never searches.  Its
rules, in the order they apply:

1. **Going out.**  When a card is offered (or forced on it) and some legal meld uses the
   whole hand, it takes the card and lays everything down: it wins at once.
2. **Taking.**  Otherwise it compares the best position a take can reach (every choice
   of hand cards to lay with the card, then the best discard) with keeping its hand.
   It takes when that is at least as good, so it takes almost every card it can meld
   but refuses a take that would break a *ready* hand (one with cards that would win)
   into a hand with fewer winning cards.  Refusing its own freshly turned card hands it
   to the opponent, so that case counts a penalty when the card fits the opponent's meld.
3. **Laying down.**  It lays the hand cards of the best plan of rule 2: ties go to the
   plan that lays the fewest cards (hand cards stay flexible and hidden).  The meld
   phase asks for one card at a time; the bot plans the whole meld when the phase
   starts and replays the plan, re-planning if the position is not the one it planned.
4. **Discarding.**  It keeps the hand with the best evaluation and so discards the card
   with the least meld potential; a card that fits the opponent's meld as it stands
   costs extra (the opponent can take it for free, and wins with it when their hand is
   nearly empty).
5. **Forcing** (variant, RULES.md section 7).  The opponent just refused a card it could
   lay with no hand card.  A sensible player does that only to keep a ready hand, so the
   bot forces when the opponent holds two or more cards (the forced discard is likely to
   break that hand).  With one card or none left the forced take may win for the opponent
   or leave them waiting on their whole meld, so it does not force.

The evaluation of a position (meld ``M``, hand ``H``) is the sum over the ten cards of a
*quality* in ``[0, 1]``: a melded card, a hand card that fits ``M`` alone, or one in a
complete set/run with other held cards counts 1; otherwise each 3-card combination the
card could still make adds 0.3 when one partner is held and the other is live (not seen:
in the stock or the opponent's hand), 0.06 when both partners are live.  Partners that
are dead or in the opponent's meld make a combination impossible, so a card whose
partners are all gone counts 0 and is the first discard.  A ready hand (some live card
would let ``M + H`` plus that card split into melds) adds 2 plus 0.5 per such card.

How strong it is (against ``random``, and what rule 2 is worth) is measured in
``docs/benchmarks.md``; the numbers live there, not here.

The functions are plain mask functions (:func:`card_quality`, :func:`position_value`,
:func:`plan_take`, :func:`choose_discard`) so that search bots can reuse them, and the card
tables they read are public for the same reason: :data:`PARTNERS` (the partner pairs of
every 3-card combination holding a card), :data:`NEIGHBOURS` (their union),
:func:`subsets` (a lay's candidates, smallest first), and the mask helpers it shares with the
meld-potential planes, :func:`conquian_env.melds.neighbours_of` and
:func:`conquian_env.melds.winning_cards`.  The
compiled twins (:mod:`agents.greedy.greedy_kernels`, the JAX one :mod:`agents.greedy.greedy_jax`)
copy these tables; their tests hold them equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conquian_env.actions import DISCARD_BASE, FINISH, FORCE, NO_FORCE, REFUSE, TAKE
from conquian_env.cards import cards_of
from conquian_env.game import DISCARD, FORCE_DECISION, MELD, OFFER, TURNED
from conquian_env.melds import can_split_into_melds, neighbours_of, playable_cards, winning_cards

from ..base import Agent, PlayerView
from ..catalog import bot
from .greedy_weights import (
    DISTANT_WEIGHT,
    FEED_PENALTY,
    FEED_PENALTY_NEAR_OUT,
    FORCE_MIN_HAND,
    LAY_COST,
    MAX_FULL_ENUM,
    NEIGHBOURS,
    OUT_WEIGHT,
    PARTIAL_WEIGHT,
    PARTNERS,
    READY_BONUS,
)

#: size at which the memo tables of the pure functions below are emptied
_CACHE_LIMIT = 1 << 17
_discard_cache: dict[tuple[int, ...], tuple[tuple[int, float], ...]] = {}
_plan_cache: dict[tuple[int, ...], tuple[int, int, float]] = {}


def card_quality(card: int, hand: int, meld: int, live: int) -> float:
    """How close hand card ``card`` is to being melded, in ``[0, 1]`` (see the module docstring)."""
    bit = 1 << card
    if meld & NEIGHBOURS[card] and can_split_into_melds(meld | bit):
        return 1.0
    held = (hand | meld) & ~bit
    q = 0.0
    for pm in PARTNERS[card]:
        have = pm & held
        if have == pm:
            if not pm & meld or can_split_into_melds(meld | bit | pm):
                return 1.0
            continue
        if pm & ~held & ~live:
            continue  # a partner is dead, in the opponent's meld or otherwise gone
        if have:
            if not have & meld or can_split_into_melds(meld | bit | pm):
                q += PARTIAL_WEIGHT
        else:
            q += DISTANT_WEIGHT
    return q if q < 1.0 else 1.0


def position_value(hand: int, meld: int, live: int) -> float:
    """Evaluation of holding ``hand`` with ``meld`` on the table (higher is better)."""
    return _value_given(hand, meld, live, [(c, card_quality(c, hand, meld, live)) for c in cards_of(hand)])


def _value_given(hand: int, meld: int, live: int, qualities: list[tuple[int, float]]) -> float:
    """:func:`position_value` from the qualities of the hand cards."""
    value = float(meld.bit_count())
    # A winning card must share a combination with every hand card that is not yet in a
    # complete one (ignoring wins through rearranging the meld: this is a heuristic).
    candidates = -1
    hopeless = False
    for c, q in qualities:
        if q < 1.0:
            hopeless = hopeless or q == 0.0
            candidates &= NEIGHBOURS[c]
        value += q
    if hopeless:
        return value
    if candidates == -1:
        candidates = neighbours_of(hand | meld)
    if candidates & live:
        outs = winning_cards(hand, meld, live, candidates).bit_count()
        if outs:
            value += READY_BONUS + OUT_WEIGHT * outs
    return value


def feed_penalty(card: int, opp_meld: int, opp_hand_size: int) -> float:
    """Cost of offering ``card`` to an opponent whose meld it fits with no hand card."""
    if opp_meld & NEIGHBOURS[card] and can_split_into_melds(opp_meld | 1 << card):
        return FEED_PENALTY_NEAR_OUT if opp_hand_size <= 1 else FEED_PENALTY
    return 0.0


def choose_discard(hand: int, meld: int, live: int, opp_meld: int, opp_hand_size: int) -> tuple[int, float]:
    """The hand card to discard and the value of the position it leaves (memoised).

    The first card (in card order) of highest value in :func:`discard_values`.
    """
    best_card, best_value = -1, -1e9
    for card, value in discard_values(hand, meld, live, opp_meld, opp_hand_size):
        if value > best_value:
            best_card, best_value = card, value
    return best_card, best_value


def discard_values(hand: int, meld: int, live: int, opp_meld: int, opp_hand_size: int) -> tuple[tuple[int, float], ...]:
    """``(card, value)`` for every hand card, in card order: the evaluation of the position
    left after discarding it, minus the cost of feeding the opponent's meld (memoised)."""
    key = (hand, meld, live, opp_meld, opp_hand_size)
    hit = _discard_cache.get(key)
    if hit is None:
        if len(_discard_cache) >= _CACHE_LIMIT:
            _discard_cache.clear()
        hit = _discard_cache[key] = _discard_values(hand, meld, live, opp_meld, opp_hand_size)
    return hit


def _discard_values(
    hand: int, meld: int, live: int, opp_meld: int, opp_hand_size: int
) -> tuple[tuple[int, float], ...]:
    cards = cards_of(hand)
    quality = {c: card_quality(c, hand, meld, live) for c in cards}
    out = []
    for d in cards:
        rest = hand & ~(1 << d)
        # only the cards that could combine with the discard change quality
        qualities = [
            (c, card_quality(c, rest, meld, live) if NEIGHBOURS[c] >> d & 1 else quality[c]) for c in cards if c != d
        ]
        out.append((d, _value_given(rest, meld, live, qualities) - feed_penalty(d, opp_meld, opp_hand_size)))
    return tuple(out)


def subsets(mask: int) -> list[int]:
    """All subsets of ``mask`` (``mask`` has few bits), smallest first."""
    subs = [0]
    for c in cards_of(mask):
        bit = 1 << c
        subs += [s | bit for s in subs]
    subs.sort(key=int.bit_count)
    return subs


def plan_take(
    hand: int, meld: int, card: int, chosen: int, live: int, opp_meld: int, opp_hand_size: int
) -> tuple[int, int, float]:
    """Best way to meld ``card``: ``(hand cards to lay, discard or -1, value)``.

    ``chosen`` are hand cards already laid in this meld (they stay laid).  The discard is
    -1 when the plan lays the whole hand (going out, value ``inf``).  Returns
    ``(0, -1, -inf)`` when the card cannot be melded at all.  Memoised.
    """
    key = (hand, meld, card, chosen, live, opp_meld, opp_hand_size)
    hit = _plan_cache.get(key)
    if hit is None:
        if len(_plan_cache) >= _CACHE_LIMIT:
            _plan_cache.clear()
        hit = _plan_cache[key] = _plan_take(hand, meld, card, chosen, live, opp_meld, opp_hand_size)
    return hit


def _plan_take(
    hand: int, meld: int, card: int, chosen: int, live: int, opp_meld: int, opp_hand_size: int
) -> tuple[int, int, float]:
    base = meld | 1 << card | chosen
    rest = hand & ~chosen
    if can_split_into_melds(base | rest):
        return rest, -1, float("inf")
    can_join = playable_cards(base, rest)
    if can_join.bit_count() <= MAX_FULL_ENUM:
        candidates = subsets(can_join)
    else:  # rare: many hand cards fit; try small lays and laying all of them
        candidates = [s for s in subsets(can_join) if s.bit_count() <= 3] + [can_join]
    best = (0, -1, float("-inf"))
    for lay in candidates:
        new_meld = base | lay
        if not can_split_into_melds(new_meld):
            continue
        left = rest & ~lay
        discard, value = choose_discard(left, new_meld, live, opp_meld, opp_hand_size)
        value -= LAY_COST * lay.bit_count()
        if value > best[2]:
            best = (lay, discard, value)
    return best


def refusing_feeds_opponent(view: PlayerView) -> bool:
    """Whether refusing the offered card hands it to the opponent (rule 2's feed penalty): the
    player just turned it and has not refused it yet.  The one statement of this for every
    Python caller of :func:`take_margin` and :func:`greedy_decision` (the search bots pass a
    :class:`~conquian_env.view.PlayerView` of their determinized state); a rule variant that
    changes where a refused card goes changes it here, from ``view.rules``, and in the twins
    (``greedy_kernels.refusing_feeds_opponent``, ``greedy_jax``)."""
    return view.face_up_source == TURNED and view.face_up_owner == view.player and not view.passed


def take_margin(
    hand: int,
    meld: int,
    card: int,
    live: int,
    opp_meld: int,
    opp_hand_size: int,
    passes_to_opponent: bool,
) -> tuple[float, tuple[int, int, float]]:
    """Value of the best take of ``card`` minus the value of keeping the hand, and the plan.

    ``inf`` when the take goes out.  Refusing a card one just turned hands it to the
    opponent, so then keeping pays the feed penalty (rule 2).
    """
    plan = plan_take(hand, meld, card, 0, live, opp_meld, opp_hand_size)
    keep = position_value(hand, meld, live)
    if passes_to_opponent:
        keep -= feed_penalty(card, opp_meld, opp_hand_size)
    return plan[2] - keep, plan


def force_decision(opp_hand_size: int) -> int:
    """Rule 5: force when the opponent holds at least :data:`FORCE_MIN_HAND` cards."""
    return FORCE if opp_hand_size >= FORCE_MIN_HAND else NO_FORCE


def greedy_decision(
    phase: int,
    hand: int,
    meld: int,
    live: int,
    opp_meld: int,
    opp_hand_size: int,
    face_up: int = -1,
    can_take: bool = False,
    passes_to_opponent: bool = False,
) -> tuple[int, int]:
    """The greedy rules' offer, discard or force decision: ``(action, cards to lay)``.

    The one statement of rules 1, 2, 4 and 5, shared by :class:`GreedyAgent`, the search
    bots (on determinized states, from the mover's side) and the learned policies'
    features.  ``cards to lay`` is the take's plan (rule 3), 0 for other decisions.
    ``passes_to_opponent``: the offered card was just turned by this player, so refusing
    it hands it to the opponent.
    """
    if phase == OFFER:
        if not can_take:
            return REFUSE, 0
        margin, plan = take_margin(hand, meld, face_up, live, opp_meld, opp_hand_size, passes_to_opponent)
        return (TAKE, plan[0]) if margin >= 0 else (REFUSE, 0)
    if phase == DISCARD:
        card, _ = choose_discard(hand, meld, live, opp_meld, opp_hand_size)
        return DISCARD_BASE + card, 0
    if phase == FORCE_DECISION:
        return force_decision(opp_hand_size), 0
    raise ValueError(f"greedy_decision answers offer, discard and force decisions, not phase {phase!r}")


@bot(
    "greedy",
    "rule-based: takes what improves its hand, goes out when it can, discards the least useful card",
)
class GreedyAgent(Agent):
    """Rule-based bot (see the module docstring for the rules).  Deterministic; ``seed`` is unused."""

    name = "greedy"

    def __init__(self, seed: int | None = None):
        self.seed = seed
        self._plan: tuple[int, int, int] | None = None  # (face_up, meld, hand cards to lay)

    @classmethod
    def batched(cls, path: str | None, params: dict[str, Any], seed: int | None) -> Any | None:
        from .batched import BatchGreedy

        return None if params else BatchGreedy()  # a spec with parameters (a seed) is played game by game

    def reset(self, player: int, seed: int | None = None) -> None:
        self._plan = None

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        return self.choose(view)

    def choose(self, view: PlayerView) -> int:
        legal = view.legal_action_mask()
        if not legal:
            raise ValueError("GreedyAgent asked to act when it has no legal action")
        if legal & (legal - 1) == 0:
            return legal.bit_length() - 1  # only one legal action
        phase = view.phase
        live = view.unseen()
        opp_meld, opp_size = view.opponent_meld, view.opponent_hand_size
        if phase == OFFER:
            passes = refusing_feeds_opponent(view)
            action, lay = greedy_decision(
                OFFER, view.hand, view.meld, live, opp_meld, opp_size, view.face_up, bool(legal >> TAKE & 1), passes
            )
            if action == TAKE:
                self._plan = (view.face_up, view.meld, lay)
            return action
        if phase == MELD:
            card, chosen, hand, meld = view.face_up, view.chosen, view.hand, view.meld
            plan = self._plan
            if plan is None or plan[0] != card or plan[1] != meld or chosen & ~plan[2]:
                lay, _, _ = plan_take(hand, meld, card, chosen, live, opp_meld, opp_size)
                plan = self._plan = (card, meld, lay | chosen)
            todo = plan[2] & ~chosen & legal
            if todo:
                return todo.bit_length() - 1  # meld action id == card index
            if legal >> FINISH & 1:
                return FINISH
            return (legal & -legal).bit_length() - 1  # unreachable with a consistent plan
        if phase in (DISCARD, FORCE_DECISION):
            # the discard of the plan: the same evaluation, of the hand left after melding
            self._plan = None
            return greedy_decision(phase, view.hand, view.meld, live, opp_meld, opp_size)[0]
        return (legal & -legal).bit_length() - 1
