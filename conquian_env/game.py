"""The Conquian rules as plain data and functions (RULES.md sections 3-8).

No gymnasium or pettingzoo in here: :class:`GameState` is a small mutable object that
search bots, the environment and the tests all drive the same way::

    from conquian_env.game import new_game
    state = new_game(seed=7)                 # or new_game(hands=..., stock=..., first=1)
    while not state.is_terminal():
        action = state.legal_actions()[0]    # ids from conquian_env.actions
        state.apply(action)
    state.returns()                          # (+1, -1), (-1, +1) or (0, 0)

Flow of one game (RULES.md section 4), as decisions of the player to move:

* ``OFFER``: a face-up card is offered to ``player``: take (only if some choice of hand
  cards melds it) or refuse.  A refused card that the refuser turned themselves passes
  to the opponent; any other refused card goes to the dead pile and the refuser turns
  the next stock card, offered to them first.  That turn on an empty stock is a draw.
* ``MELD``: after a take, add hand cards one at a time (each only if the meld can still
  be completed) and finish when the cards chosen make a valid meld.  With the hand then
  empty the player has 11 cards melded and wins; otherwise they discard.
* ``DISCARD``: one hand card goes face up and is offered to the opponent.
* ``FORCE`` (the forcing variant, :mod:`conquian_env.rules`): a player just refused a card that fits their
  meld with no hand card; the opponent decides whether to force them to take it.

Cards are ints 0..39 and card sets int bit masks (:mod:`conquian_env.cards`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import Any, NamedTuple, Protocol

import numpy as np

from .actions import (
    DISCARD_BASE,
    FINISH,
    FORCE,
    NO_FORCE,
    NUM_ACTIONS,
    REFUSE,
    TAKE,
    action_to_str,
    as_action_id,
)
from .cards import CARD_NAMES, FULL_MASK, NUM_CARDS, cards_of, cards_str, parse_card
from .melds import can_extend_to_meld, can_split_into_melds, playable_cards
from .rules import Rules, resolve

HAND_SIZE = 10
#: random re-deals tried by ``determinize`` before it deals a completing meld directly
DETERMINIZE_TRIES = 64
STOCK_SIZE = 20

# Phases: what kind of decision the player to move makes.
OFFER = 0
MELD = 1
DISCARD = 2
FORCE_DECISION = 3
GAME_OVER = 4
PHASE_NAMES = ("offer", "meld", "discard", "force", "over")

# Where the face-up card came from.
TURNED = 0
DISCARDED = 1

_TAKE_BIT = 1 << TAKE
_REFUSE_BIT = 1 << REFUSE
_FINISH_BIT = 1 << FINISH
_FORCE_BITS = 1 << FORCE | 1 << NO_FORCE


class IllegalActionError(ValueError):
    """An action that is not legal in the current state (the message lists the legal ones)."""


class IllegalActionWarning(UserWarning):
    """Issued when the penalize mode ends a game on an illegal action (filter it by category)."""


#: the modules of the environment checkers, which step random actions without the mask on purpose:
#: an illegal action they step is penalized as always, without an IllegalActionWarning
CHECKERS = (
    "gymnasium.utils.env_checker",  # not the passive checker: gymnasium.make wraps the user's own first step in it
    "stable_baselines3.common.env_checker",
    "pettingzoo.test",
)


def warn_illegal(message: str) -> None:
    """Issue an :class:`IllegalActionWarning` pointing at the user's code that stepped.

    The warning names the first frame outside this package and PettingZoo's wrappers (so it
    does not point at ``OrderEnforcingWrapper``), and it keeps no per-message entry in a
    module's warning registry: every illegal action has its own text, and a long run must
    not accumulate them.  Each one is shown (filter the category to silence them), except
    when an environment checker (:data:`CHECKERS`: Gymnasium's and Stable-Baselines3's
    ``check_env``, PettingZoo's tests) stepped: they step random unmasked actions on purpose.
    """
    import os
    import sys
    import warnings

    here = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        inside = os.path.abspath(filename).startswith(here) or f"{os.sep}pettingzoo{os.sep}" in filename
        if not inside:
            break
        frame = frame.f_back
    outer = frame
    while outer is not None:
        if str(outer.f_globals.get("__name__", "")).startswith(CHECKERS):
            return  # a checker's random action, not the user's: the game still ends as penalized
        outer = outer.f_back
    if frame is None:
        filename, lineno, module = "<unknown>", 0, None
    else:
        filename, lineno, module = frame.f_code.co_filename, frame.f_lineno, frame.f_globals.get("__name__")
    warnings.warn_explicit(message, IllegalActionWarning, filename, lineno, module=module, registry=None)


class ShuffleRng(Protocol):
    def shuffle(self, x: Any) -> None: ...


# ------------------------------------------------------------------ the fields of a game
# Kinds of GameState field.
MASK = "mask"  # a card bit mask (conquian_env.cards)
INT = "int"  # a small integer: a card index or -1, a seat, a phase, a count
BOOL = "bool"
PAIR = "pair"  # a list of two card masks, one per player
STOCK = "stock"  # the tuple of the STOCK_SIZE stock cards, top first
RULES = "rules"  # the game's conquian_env.rules.Rules (one int in a row: its flags)
#: how many integers a field of each kind is (its columns in a row of the batched engine)
FIELD_WIDTH = {MASK: 1, INT: 1, BOOL: 1, PAIR: 2, STOCK: STOCK_SIZE, RULES: 1}


class Field(NamedTuple):
    """One field of :class:`GameState` (see :data:`FIELDS`)."""

    name: str
    kind: str
    #: its key in the replay page's compact state (``conquian_arena.pages.state_row``);
    #: None where the page leaves it out
    short: str | None


#: Every field of a :class:`GameState` (its legal-move cache ``_mask`` aside), with its kind:
#: the one list that the class's slots, :meth:`GameState.clone`, the batched engine's row
#: conversion (``VectorGame.get_game`` / ``set_game``, in this order: the row layout of
#: ``conquian_env.kernels``) and the replay page's states are built from.
FIELDS: tuple[Field, ...] = (
    Field("hands", PAIR, "h"),
    Field("melds", PAIR, "m"),  # the page shows each meld split into its sets and runs
    Field("discards", PAIR, None),
    Field("refusals", PAIR, None),
    Field("dead", MASK, "d"),
    Field("chosen", MASK, "c"),
    Field("face_up", INT, "f"),
    Field("source", INT, "src"),
    Field("owner", INT, "o"),
    Field("passed", BOOL, "p"),
    Field("player", INT, "t"),
    Field("phase", INT, "ph"),
    Field("winner", INT, "w"),
    Field("forced", BOOL, None),
    Field("rules", RULES, None),
    Field("move_count", INT, None),
    Field("stock_pos", INT, "k"),  # the page shows the cards left, STOCK_SIZE - stock_pos
    Field("stock", STOCK, None),  # the page shows no stock order
)
#: the fields clone() shares (ints, bools and the stock tuple: immutable) and copies (the lists)
_SHARED_FIELDS = tuple(f.name for f in FIELDS if f.kind != PAIR)
_LIST_FIELDS = tuple(f.name for f in FIELDS if f.kind == PAIR)


class GameState:
    """Full state of one Conquian game.  Mutable; :meth:`clone` for search.

    Public attributes (read them, change them only through :meth:`apply`):

    ``hands[p]``, ``melds[p]``: bit masks of player ``p``'s hand and table meld.
    ``stock``: tuple of the 20 stock cards, top first; ``stock_pos`` cards were turned.
    ``dead``: mask of the dead pile.  ``face_up``: the card in the middle or -1.
    ``source`` (TURNED/DISCARDED), ``owner`` (who turned or discarded it),
    ``passed`` (a turned card already refused by its turner).
    ``player``: who decides now; ``phase``: OFFER, MELD, DISCARD, FORCE_DECISION, GAME_OVER.
    ``chosen``: hand cards laid so far in the meld being made (public: they are on the table).
    ``discards[p]`` / ``refusals[p]``: masks of cards player ``p`` discarded / refused.
    ``winner``: 0 or 1, or -1 (none yet, or a draw); ``forced``: the current take was forced.
    ``rules``: the :class:`~conquian_env.rules.Rules` the game is played by (``forcing``: its variant).
    """

    __slots__ = (*(f.name for f in FIELDS), "_mask")  # the fields of FIELDS, and the cache

    # the same fields, typed, in the same order (tests/test_rules.py checks that these are FIELDS)
    hands: list[int]
    melds: list[int]
    discards: list[int]
    refusals: list[int]
    dead: int
    chosen: int
    face_up: int
    source: int
    owner: int
    passed: bool
    player: int
    phase: int
    winner: int
    forced: bool
    rules: Rules
    move_count: int
    stock_pos: int
    stock: tuple[int, ...]
    _mask: int

    # ------------------------------------------------------------------ queries
    @property
    def current_player(self) -> int:
        """Player to decide now (0 or 1); -1 once the game is over."""
        return -1 if self.phase == GAME_OVER else self.player

    @property
    def stock_left(self) -> int:
        return STOCK_SIZE - self.stock_pos

    def is_terminal(self) -> bool:
        return self.phase == GAME_OVER

    def is_draw(self) -> bool:
        return self.phase == GAME_OVER and self.winner < 0

    def returns(self) -> tuple[int, int]:
        """(+1, -1) when player 0 won, (-1, +1) when player 1 won, (0, 0) otherwise."""
        if self.winner == 0:
            return (1, -1)
        if self.winner == 1:
            return (-1, 1)
        return (0, 0)

    def legal_action_mask(self) -> int:
        """Legal actions as an int bit mask over the 85 action ids (exact, RULES.md section 8)."""
        mask = self._mask
        if mask < 0:
            mask = self._mask = self._compute_mask()
        return mask

    def _compute_mask(self) -> int:
        phase = self.phase
        p = self.player
        if phase == OFFER:
            if can_extend_to_meld(self.melds[p] | 1 << self.face_up, self.hands[p]):
                return _TAKE_BIT | _REFUSE_BIT
            return _REFUSE_BIT
        if phase == MELD:
            base = self.melds[p] | 1 << self.face_up | self.chosen
            mask = playable_cards(base, self.hands[p] & ~self.chosen)  # bits 0..39 = meld ids
            if can_split_into_melds(base):
                mask |= _FINISH_BIT
            return mask
        if phase == DISCARD:
            return self.hands[p] << DISCARD_BASE
        if phase == FORCE_DECISION:
            return _FORCE_BITS
        return 0

    def legal_actions(self) -> list[int]:
        """Legal action ids, ascending."""
        return cards_of(self.legal_action_mask())  # the set bits of any int mask

    def is_legal(self, action: int) -> bool:
        return 0 <= action < NUM_ACTIONS and bool(self.legal_action_mask() >> action & 1)

    def check_action(self, action: Any) -> int:
        """The action id of ``action`` when it is legal now: the one judgement of an answer.

        Raises ``ValueError`` when ``action`` is not an action id at all (``80.7``, ``True``,
        ``-1``, ``"80"``: see :func:`~conquian_env.actions.as_action_id`) and
        :class:`IllegalActionError` (a ``ValueError`` too) when it is an id that is not
        legal here; both messages say what is allowed.  The environments raise or
        penalize on it; a game runner forfeits the player who answered it.
        """
        a = as_action_id(action)
        if not self.legal_action_mask() >> a & 1:
            raise IllegalActionError(self._illegal_message(a))
        return a

    def unseen_cards(self, player: int) -> int:
        """Cards ``player`` cannot see: the opponent's hidden hand cards plus the stock."""
        seen = self.hands[player] | self.melds[0] | self.melds[1] | self.dead | self.chosen
        if self.face_up >= 0:
            seen |= 1 << self.face_up
        return FULL_MASK & ~seen

    # ------------------------------------------------------------------ moves
    def apply(self, action: int) -> None:
        """Play one decision for the player to move.  Raises IllegalActionError if illegal."""
        if type(action) is not int:  # numpy integers become ints; 80.0 or True is no action
            if isinstance(action, (bool, np.bool_)) or not hasattr(action, "__index__"):
                raise IllegalActionError(f"an action is an integer id from 0 to {NUM_ACTIONS - 1}, got {action!r}")
            action = action.__index__()
        mask = self._mask
        if mask < 0:
            mask = self._compute_mask()
        if not (0 <= action < NUM_ACTIONS and mask >> action & 1):
            raise IllegalActionError(self._illegal_message(action))
        self._mask = -1
        self.move_count += 1
        p = self.player
        if action == REFUSE:
            card_bit = 1 << self.face_up
            self.refusals[p] |= card_bit
            if self.rules.forcing and can_split_into_melds(self.melds[p] | card_bit):
                self.player = 1 - p
                self.phase = FORCE_DECISION
            else:
                self._after_refusal(p)
        elif action == TAKE:
            self.phase = MELD
            self.chosen = 0
            self.forced = False
        elif action < NUM_CARDS:
            self.chosen |= 1 << action
        elif action == FINISH:
            hand = self.hands[p] & ~self.chosen
            self.melds[p] |= 1 << self.face_up | self.chosen
            self.hands[p] = hand
            self.chosen = 0
            self.face_up = -1
            if hand:
                self.phase = DISCARD
            else:
                self.winner = p
                self.phase = GAME_OVER
        elif action < DISCARD_BASE + NUM_CARDS:
            card = action - DISCARD_BASE
            bit = 1 << card
            self.hands[p] &= ~bit
            self.discards[p] |= bit
            self.face_up = card
            self.source = DISCARDED
            self.owner = p
            self.passed = False
            self.player = 1 - p
            self.phase = OFFER
        elif action == FORCE:
            self.player = 1 - p  # the refuser must take the card
            self.phase = MELD
            self.chosen = 0
            self.forced = True
        else:  # NO_FORCE: the refusal stands
            self._after_refusal(1 - p)

    def forfeit(self, loser: int) -> None:
        """End the game at once with ``loser`` losing (the environment's illegal-action penalty)."""
        if loser not in (0, 1):
            raise ValueError(f"loser must be 0 or 1, got {loser!r}")
        if self.phase == GAME_OVER:  # a finished game's result is final
            raise RuntimeError("the game is already over: its result cannot be changed by a forfeit")
        self.winner = 1 - loser
        self.phase = GAME_OVER
        self.chosen = 0
        self._mask = 0

    def _after_refusal(self, p: int) -> None:
        if self.source == TURNED and self.owner == p and not self.passed:
            # first refusal of one's own turned card: it is offered to the opponent
            self.passed = True
            self.player = 1 - p
            self.phase = OFFER
            return
        self.dead |= 1 << self.face_up
        if self.stock_pos >= STOCK_SIZE:
            self.face_up = -1
            self.winner = -1
            self.phase = GAME_OVER
            return
        self._turn(p)

    def _turn(self, p: int) -> None:
        self.face_up = self.stock[self.stock_pos]
        self.stock_pos += 1
        self.source = TURNED
        self.owner = p
        self.passed = False
        self.player = p
        self.phase = OFFER

    def _illegal_message(self, action: Any) -> str:
        try:
            text = action_to_str(action)
        except (ValueError, TypeError):
            text = "not an action id"
        legal = ", ".join(f"{a} ({action_to_str(a)})" for a in self.legal_actions())
        if self.phase == GAME_OVER:
            return f"illegal action {action!r} ({text}): the game is over, no action is legal"
        return (
            f"illegal action {action!r} ({text}) for player {self.player} in phase "
            f"{PHASE_NAMES[self.phase]}; legal actions: {legal}"
        )

    def action_to_str(self, action: int) -> str:
        return action_to_str(action)

    # ------------------------------------------------------------------ checks
    def validate(self, *, legal_move: bool = True) -> None:
        """Check that this is a position the rules can reach; ``ValueError`` naming the field if not.

        For states built or loaded from outside the engine (``VectorGame.set_game``, saved
        positions): every field has its type and range, the 40 cards are each in exactly
        one place (a hand, a meld, the dead pile, face up, or the stock not yet turned),
        and phase, player, face-up card, winner and the cards being melded agree with each
        other; a game not over has a legal action (``legal_move=False`` leaves that one
        check, the only costly one, to the caller: ``VectorGame.set_game`` asks its compiled
        twin of the mask).  The discard and refusal records are only range-checked (they
        are history).
        """
        missing = [name for name in self.__slots__ if name != "_mask" and not hasattr(self, name)]
        if missing:
            raise ValueError(f"GameState has no {', '.join(missing)}")
        hands, melds = _mask_pair("hands", self.hands), _mask_pair("melds", self.melds)
        _mask_pair("discards", self.discards)
        _mask_pair("refusals", self.refusals)
        if not isinstance(self.rules, Rules):
            raise ValueError(f"GameState.rules must be a conquian_env.rules.Rules, got {self.rules!r}")
        for name in ("passed", "forced"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"GameState.{name} must be True or False, got {getattr(self, name)!r}")
        stock = self.stock
        if not isinstance(stock, (list, tuple)) or len(stock) != STOCK_SIZE:
            raise ValueError(f"GameState.stock must be a tuple of the {STOCK_SIZE} stock cards, got {stock!r}")
        if not all(type(c) is int and 0 <= c < NUM_CARDS for c in stock):  # the slow path names the card
            stock = [_integer(f"stock[{k}]", c, 0, NUM_CARDS - 1, "a card index 0..39") for k, c in enumerate(stock)]
        if len(set(stock)) != STOCK_SIZE:
            twice = [CARD_NAMES[c] for c in set(stock) if stock.count(c) > 1]
            raise ValueError(f"GameState.stock must hold 20 different cards, has {' '.join(twice)} more than once")
        stock_pos = _integer("stock_pos", self.stock_pos, 0, STOCK_SIZE, "0..20 (cards turned)")
        dead, chosen = (
            _integer("dead", self.dead, 0, FULL_MASK, _MASK),
            _integer("chosen", self.chosen, 0, FULL_MASK, _MASK),
        )
        face_up = _integer("face_up", self.face_up, -1, NUM_CARDS - 1, "a card index 0..39, or -1 for none")
        source = _integer("source", self.source, 0, 1, "0 (turned) or 1 (discarded)")
        owner = _integer("owner", self.owner, 0, 1, "0 or 1")
        player = _integer("player", self.player, 0, 1, "0 or 1")
        phase = _integer("phase", self.phase, 0, GAME_OVER, "0..4 (offer, meld, discard, force, over)")
        winner = _integer("winner", self.winner, -1, 1, "0, 1, or -1 for none / a draw")
        _integer("move_count", self.move_count, 0, 2**62, "a count of decisions >= 0")

        places = [("hands[0]", hands[0]), ("hands[1]", hands[1]), ("melds[0]", melds[0]), ("melds[1]", melds[1])]
        places += [("dead", dead), ("face_up", 1 << face_up if face_up >= 0 else 0)]
        in_stock = 0
        for c in stock[stock_pos:]:
            in_stock |= 1 << c
        places.append(("the stock not yet turned", in_stock))
        seen = 0
        for k, (name, cards) in enumerate(places):
            if cards & seen:
                other = next(n for n, c in places[:k] if c & cards)
                raise ValueError(f"GameState: {cards_str(cards & seen)} in both {other} and {name}")
            seen |= cards
        if seen != FULL_MASK:
            raise ValueError(f"GameState: {cards_str(FULL_MASK & ~seen)} in no place (each of the 40 cards is in one)")
        turned = 0
        for c in stock[:stock_pos]:
            turned |= 1 << c
        if turned & (hands[0] | hands[1]):
            raise ValueError(f"GameState: turned stock card(s) {cards_str(turned & (hands[0] | hands[1]))} in a hand")

        name = PHASE_NAMES[phase]
        if (face_up < 0) != (phase == DISCARD) and phase != GAME_OVER:
            need = "no face-up card (-1)" if phase == DISCARD else "a face-up card"
            raise ValueError(f"GameState.face_up: phase {name} needs {need}, got {face_up}")
        if face_up >= 0 and source == TURNED and (stock_pos == 0 or stock[stock_pos - 1] != face_up):
            raise ValueError("GameState.face_up: a turned face-up card is the last stock card turned")
        if face_up >= 0 and source == DISCARDED and not (self.discards[owner] >> face_up & 1 and not self.passed):
            raise ValueError("GameState.face_up: a discarded face-up card is in its owner's discards, never passed")
        if phase == OFFER:
            offered_to = owner if source == TURNED and not self.passed else 1 - owner
            if player != offered_to:
                raise ValueError(f"GameState.player: this face-up card is offered to player {offered_to}, not {player}")
        if chosen & ~hands[player] or (chosen and phase != MELD):
            raise ValueError("GameState.chosen: the cards being melded are in the mover's hand, in phase meld only")
        if phase == FORCE_DECISION and not self.rules.forcing:
            raise ValueError("GameState.phase: the force phase exists only in the forcing variant")
        if phase == GAME_OVER:
            if winner < 0 and (stock_pos < STOCK_SIZE or face_up >= 0):
                raise ValueError("GameState.winner: a draw (-1) ends a game only on an empty stock, no card face up")
        elif winner >= 0:
            raise ValueError(f"GameState.winner: a game in phase {name} has no winner yet (-1), got {winner}")
        elif legal_move and not self._compute_mask():
            raise ValueError(f"GameState: player {player} has no legal action in phase {name}")

    # ------------------------------------------------------------------ copies
    def clone(self) -> GameState:
        """An independent copy (the field lists copied, the rest shared: it is immutable)."""
        c = blank_state()
        for name in _SHARED_FIELDS:
            setattr(c, name, getattr(self, name))
        for name in _LIST_FIELDS:
            setattr(c, name, getattr(self, name)[:])
        c._mask = self._mask
        return c

    __copy__ = clone

    def determinize(self, player: int, rng: ShuffleRng) -> GameState:
        """A full state consistent with everything ``player`` knows, hidden cards re-dealt.

        ``player``'s hand, both melds, the dead pile, the face-up card and the cards
        laid so far in a meld being made stay put; the opponent's other hand cards and
        the remaining stock are shuffled together (with ``rng.shuffle``, e.g. a numpy
        Generator or ``random.Random``) and dealt back in the same sizes.  When the
        opponent is melding, only deals whose hand can complete that meld are kept.  The
        result depends only on public information, ``player``'s hand and ``rng``.
        """
        if player not in (0, 1):
            raise ValueError(f"player must be 0 or 1, got {player!r}")
        opp = 1 - player
        opp_hidden = self.hands[opp] & ~self.chosen
        pool = cards_of(opp_hidden | _stock_mask(self))  # sorted: independent of the true order
        n_opp = opp_hidden.bit_count()
        # An opponent in the middle of a meld took the card, so their hand can complete it.
        # Re-deal (rejection sampling, exact) up to DETERMINIZE_TRIES times; in the rare
        # positions where few deals fit, deal a completing set of cards first and the rest
        # at random (direct, a few shuffles at most).
        melding = self.phase == MELD and self.player == opp
        base = self.melds[opp] | 1 << self.face_up | self.chosen if melding else 0
        for _ in range(DETERMINIZE_TRIES):
            rng.shuffle(pool)
            hidden = 0
            for card in pool[:n_opp]:
                hidden |= 1 << card
            if not melding or can_extend_to_meld(base, hidden):
                break
        else:
            pool = _completing_deal(pool, n_opp, base, rng)
            hidden = 0
            for card in pool[:n_opp]:
                hidden |= 1 << card
        c = self.clone()
        c.hands[opp] = self.hands[opp] & self.chosen | hidden
        c.stock = self.stock[: self.stock_pos] + tuple(int(x) for x in pool[n_opp:])
        c._mask = -1  # the cached legal mask may belong to the opponent's old hand
        return c

    # ------------------------------------------------------------------ views
    def to_dict(self) -> dict[str, Any]:
        """Plain-data view of the whole state (both hands and the stock: not for agents)."""
        return {
            "hands": [cards_str(h).split() for h in self.hands],
            "melds": [cards_str(m).split() for m in self.melds],
            "stock": [CARD_NAMES[c] for c in self.stock[self.stock_pos :]],
            "dead": cards_str(self.dead).split(),
            "face_up": CARD_NAMES[self.face_up] if self.face_up >= 0 else None,
            "source": ("turned", "discarded")[self.source] if self.face_up >= 0 else None,
            "owner": self.owner if self.face_up >= 0 else None,
            "passed": self.passed,
            "player": self.current_player,
            "phase": PHASE_NAMES[self.phase],
            "chosen": cards_str(self.chosen).split(),
            "discards": [cards_str(m).split() for m in self.discards],
            "refusals": [cards_str(m).split() for m in self.refusals],
            "winner": self.winner if self.winner >= 0 else None,
            "rules": self.rules.to_dict(),
            "move_count": self.move_count,
        }

    def __repr__(self) -> str:
        return f"GameState({self.to_dict()!r})"


_MASK = "a card mask, 0 <= mask < 2**40"


def _integer(name: str, value: Any, low: int, high: int, allowed: str) -> int:
    """``value`` as an int in ``low..high``, or a ValueError naming the GameState field."""
    if type(value) is not int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, np.integer):
            raise ValueError(f"GameState.{name} must be an integer ({allowed}), got {value!r}")
        value = int(value)
    if not low <= value <= high:
        raise ValueError(f"GameState.{name} must be {allowed}, got {value!r}")
    return value


def _mask_pair(name: str, value: Any) -> list[int]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ValueError(f"GameState.{name} must be a list of two card masks (one per player), got {value!r}")
    return [
        _integer(f"{name}[0]", value[0], 0, FULL_MASK, _MASK),
        _integer(f"{name}[1]", value[1], 0, FULL_MASK, _MASK),
    ]


def _completing_deal(pool: list[int], n_hand: int, base: int, rng: ShuffleRng) -> list[int]:
    """``pool`` reordered so that its first ``n_hand`` cards can complete the meld ``base``.

    A smallest set of pool cards that makes ``base`` a valid meld is chosen (subsets tried
    by size, in an order shuffled by ``rng``), then the rest of the hand and the stock are
    dealt from the other cards at random.
    """
    playable = cards_of(playable_cards(base, sum(1 << c for c in pool)))
    rng.shuffle(playable)
    for size in range(1, n_hand + 1):
        for combo in combinations(playable, size):
            completion = sum(1 << c for c in combo)
            if can_split_into_melds(base | completion):
                rest = [c for c in pool if not completion >> c & 1]
                rng.shuffle(rest)
                return list(combo) + rest
    raise ValueError("no deal of the hidden cards completes the opponent's meld: the state is inconsistent")


def _stock_mask(state: GameState) -> int:
    mask = 0
    for card in state.stock[state.stock_pos :]:
        mask |= 1 << card
    return mask


def blank_state() -> GameState:
    """A :class:`GameState` with no fields set, for code that fills every field itself (a copy, a
    state rebuilt from an engine row): it skips ``__init__``'s deal and checks."""
    return GameState.__new__(GameState)


def validate_deal(
    hands: Sequence[Sequence[str | int]], stock: Sequence[str | int]
) -> tuple[list[int], tuple[int, ...]]:
    """Check a stacked deal and return (hand masks, stock tuple top first).

    Raises ``ValueError`` naming what is wrong: an unknown card, a duplicate, the wrong
    number of hands or cards, or cards missing from the 40.
    """
    if isinstance(hands, (str, bytes)) or not isinstance(hands, Sequence) or len(hands) != 2:
        raise ValueError(f"a deal has exactly 2 hands of {HAND_SIZE} cards (a list of two lists), got {hands!r}")
    seen: dict[int, str] = {}
    masks = [
        sum(1 << c for c in _dealt(hand, f"hand {p}", "each hand", HAND_SIZE, seen)) for p, hand in enumerate(hands)
    ]
    cards = _dealt(stock, "the stock", "it", STOCK_SIZE, seen)
    missing = FULL_MASK & ~(masks[0] | masks[1] | sum(1 << c for c in cards))
    if missing:  # unreachable with the counts above, kept as a guard for future deal sizes
        raise ValueError(f"cards missing from the deal: {cards_str(missing)}")
    return masks, tuple(cards)


def _dealt(cards: Sequence[str | int] | str, what: str, each: str, size: int, seen: dict[int, str]) -> list[int]:
    """The ids of ``what``'s ``size`` cards (names, ids, or one string of names), each claimed in
    ``seen`` (card -> where it was dealt); ``ValueError`` naming what is wrong."""
    if isinstance(cards, str):
        cards = cards.replace(",", " ").split()
    if not isinstance(cards, Iterable) or isinstance(cards, bytes):
        raise ValueError(f"{what} must be a list of {size} cards, got {cards!r}")
    cards = list(cards)
    if len(cards) != size:
        raise ValueError(f"{what} has {len(cards)} cards; {each} must have exactly {size}")
    where = what.removeprefix("the ")
    ids = []
    for c in cards:
        idx = parse_card(c)
        if idx in seen:
            raise ValueError(f"card {CARD_NAMES[idx]} is dealt twice ({seen[idx]} and {where})")
        seen[idx] = where
        ids.append(idx)
    return ids


def shuffled_deal(seed: int | np.random.Generator | None) -> tuple[list[int], tuple[int, ...]]:
    """Deal from a numpy Generator seeded by ``seed``: cards one at a time, first to player 0."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    order = [int(c) for c in rng.permutation(NUM_CARDS)]
    hands = [0, 0]
    for i in range(2 * HAND_SIZE):
        hands[i % 2] |= 1 << order[i]
    return hands, tuple(order[2 * HAND_SIZE :])


def new_game(
    seed: int | np.random.Generator | None = None,
    *,
    hands: Sequence[Sequence[str | int]] | None = None,
    stock: Sequence[str | int] | None = None,
    first: int = 0,
    rules: Rules | None = None,
    **rule_fields: bool,
) -> GameState:
    """Start a game: the first player turns the top stock card, which is offered to them.

    Either shuffle with ``seed`` or give a stacked deal (``hands`` = two lists of ten
    cards, ``stock`` = twenty cards top first; cards as text or indexes).
    ``rules`` (:mod:`conquian_env.rules`, default the standard game), or any of its fields as a
    keyword shortcut (``forcing=True``).
    """
    if isinstance(first, (bool, np.bool_)) or not hasattr(first, "__index__") or first.__index__() not in (0, 1):
        raise ValueError(f"first must be 0 or 1 (the player who plays first), got {first!r}")
    first = first.__index__()  # a numpy integer becomes a plain int
    rules = resolve(rules, **rule_fields)
    if (hands is None) != (stock is None):
        raise ValueError("a stacked deal needs both 'hands' and 'stock'")
    if hands is not None and stock is not None:
        hand_masks, stock_cards = validate_deal(hands, stock)
    else:
        hand_masks, stock_cards = shuffled_deal(seed)
    s = blank_state()
    s.hands = hand_masks
    s.melds = [0, 0]
    s.stock = stock_cards
    s.stock_pos = 0
    s.dead = 0
    s.chosen = 0
    s.discards = [0, 0]
    s.refusals = [0, 0]
    s.winner = -1
    s.forced = False
    s.rules = rules
    s.move_count = 0
    s._mask = -1
    s._turn(first)
    return s
