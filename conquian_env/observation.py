"""Observation arrays: a game state seen from one player's side.

:func:`encode` turns a :class:`~conquian_env.game.GameState` and a player into a flat
``int8`` vector of 0/1 values, the ``"observation"`` part of the environment's
observation.  Everything is from the observing player's side ("own" = that player), and
nothing in it depends on the opponent's hidden hand cards or the order of the stock.

====  =======  =====================================================================
slot  length   contents
====  =======  =====================================================================
0     40       own hand (cards still held, including those being laid in a meld)
40    40       own meld on the table
80    40       opponent's meld on the table
120   40       the face-up card (all zero when there is none)
160   40       the dead pile (refused cards, public)
200   40       cards laid so far in the meld being made (by whoever is melding)
240   40       cards the opponent discarded (this game)
280   40       cards the opponent refused (this game)
320   40       cards the observing player discarded
360   40       cards the observing player refused
400   20       stock size, thermometer: slot ``400 + i`` is 1 when more than ``i`` cards are left
420   11       own hand size, one-hot 0..10
431   11       opponent's hand size, one-hot 0..10
442   6        phase, one-hot: my offer, my meld, my discard, my force decision,
               opponent to move, game over
448   5        face-up card source, one-hot: none, turned by me, turned by opponent,
               discarded by me, discarded by opponent
453   1        the face-up card was turned and already refused by its turner
454   1        the meld being made is a forced take (forcing variant)
455   R        the rules: one 1-wide piece per field of :class:`~conquian_env.rules.Rules`,
               named after it, in field order (``forcing`` first), 1 when that variant is on
====  =======  =====================================================================

``R`` is the number of rule fields, so the vector has ``455 + R`` slots (:data:`OBS_SIZE`).

Card planes use card indexes (``suit * 10 + rank``, :mod:`conquian_env.cards`).
:func:`decode` turns an observation back into named parts.  The pieces are declared once,
in :data:`conquian_env.layout.OBSERVATION` (:data:`OBS_LAYOUT` is its table as data;
``tests/test_observation.py`` keeps the table above equal to it).  :func:`encode_state` is
the full-information ``state()`` array (both hands, stock order) for centralised critics:
never part of an agent's observation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .actions import NUM_ACTIONS
from .cards import CARD_NAMES, NUM_CARDS
from .game import (
    DISCARD,
    DISCARDED,
    FORCE_DECISION,
    GAME_OVER,
    MELD,
    OFFER,
    STOCK_SIZE,
    GameState,
)
from .layout import OBSERVATION, STATE
from .rules import Rules

#: (name, start, length, description) of each part of the observation vector: the rows of
#: :data:`conquian_env.layout.OBSERVATION`, where the pieces are declared
OBS_LAYOUT: tuple[tuple[str, int, int, str], ...] = OBSERVATION.rows()
#: length of the observation vector, from the layout
OBS_SIZE = OBSERVATION.size
#: start slot of each part, by name (the encoder below shifts by these, nothing else)
OBS_AT = dict(OBSERVATION.offsets)
_OWN_HAND = OBS_AT["own_hand"]
_OWN_MELD = OBS_AT["own_meld"]
_OPP_MELD = OBS_AT["opponent_meld"]
_FACE_UP = OBS_AT["face_up"]
_DEAD = OBS_AT["dead"]
_PENDING = OBS_AT["pending_meld"]
_OPP_DISCARDS = OBS_AT["opponent_discards"]
_OPP_REFUSALS = OBS_AT["opponent_refusals"]
_OWN_DISCARDS = OBS_AT["own_discards"]
_OWN_REFUSALS = OBS_AT["own_refusals"]
_STOCK = OBS_AT["stock_size"]
_OWN_SIZE = OBS_AT["own_hand_size"]
_OPP_SIZE = OBS_AT["opponent_hand_size"]
_PHASE = OBS_AT["phase"]
_SOURCE = OBS_AT["source"]
_PASSED = OBS_AT["passed"]
_FORCED = OBS_AT["forced"]
PHASE_VALUES = ("my_offer", "my_meld", "my_discard", "my_force", "opponent_to_move", "game_over")
SOURCE_VALUES = ("none", "turned_by_me", "turned_by_opponent", "discarded_by_me", "discarded_by_opponent")

_PHASE_OF = {OFFER: 0, MELD: 1, DISCARD: 2, FORCE_DECISION: 3}


def observation_bits(state: GameState, player: int) -> int:
    """The observation of ``player`` as one int whose bit ``i`` is slot ``i``."""
    opp = 1 - player
    face = state.face_up
    bits = (
        state.hands[player] << _OWN_HAND
        | state.melds[player] << _OWN_MELD
        | state.melds[opp] << _OPP_MELD
        | state.dead << _DEAD
        | state.chosen << _PENDING
        | state.discards[opp] << _OPP_DISCARDS
        | state.refusals[opp] << _OPP_REFUSALS
        | state.discards[player] << _OWN_DISCARDS
        | state.refusals[player] << _OWN_REFUSALS
        | ((1 << (STOCK_SIZE - state.stock_pos)) - 1) << _STOCK
        | 1 << (_OWN_SIZE + state.hands[player].bit_count())
        | 1 << (_OPP_SIZE + state.hands[opp].bit_count())
    )
    phase = state.phase
    if phase == GAME_OVER:
        bits |= 1 << (_PHASE + 5)
    elif state.player != player:
        bits |= 1 << (_PHASE + 4)
    else:
        bits |= 1 << (_PHASE + _PHASE_OF[phase])
    if face >= 0:
        bits |= 1 << (_FACE_UP + face)
        source = 1 + (state.owner != player) + 2 * (state.source == DISCARDED)
        bits |= 1 << (_SOURCE + source)
        if state.passed:
            bits |= 1 << _PASSED
    else:
        bits |= 1 << _SOURCE
    if state.forced and phase == MELD:
        bits |= 1 << _FORCED
    return bits | rules_bits(state.rules)


def rules_bits(rules: Rules, at: Any = OBS_AT) -> int:
    """The bits that the game's rules set: each variant that is on sets the 1-wide piece named
    after it (in :data:`OBS_AT`, or the offsets ``at`` of another layout such as the state's)."""
    return sum(1 << at[name] for name, on in rules.to_dict().items() if on)


def bits_to_array(bits: int, length: int) -> np.ndarray:
    """0/1 int8 array of the low ``length`` bits of ``bits`` (bit i -> element i)."""
    raw = np.frombuffer(bits.to_bytes((length + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(raw, count=length, bitorder="little").view(np.int8)


def encode(state: GameState, player: int) -> np.ndarray:
    """Observation vector (``int8``, shape ``(OBS_SIZE,)``) of ``player``."""
    return bits_to_array(observation_bits(state, player), OBS_SIZE)


def action_mask(state: GameState, player: int) -> np.ndarray:
    """Legal-action mask (``int8``, shape ``(85,)``) for ``player``: zeros unless they are to move."""
    mask = state.legal_action_mask() if state.player == player and state.phase != GAME_OVER else 0
    return bits_to_array(mask, NUM_ACTIONS)


def _cards_in(vec: np.ndarray) -> list[str]:
    return [CARD_NAMES[i] for i in np.flatnonzero(vec)]


def decode(observation: Any) -> dict[str, Any]:
    """Named parts of an observation vector (cards as text, sizes and one-hots as values)."""
    obs = np.asarray(observation)
    if obs.shape != (OBS_SIZE,):
        raise ValueError(f"an observation has shape ({OBS_SIZE},), got {obs.shape}")
    out: dict[str, Any] = {}
    for name, start, length, _ in OBS_LAYOUT:
        part = obs[start : start + length]
        if length == NUM_CARDS:
            out[name] = _cards_in(part)
        elif name == "stock_size":
            out[name] = int(part.sum())
        elif name in ("own_hand_size", "opponent_hand_size"):
            out[name] = int(np.argmax(part))
        elif name == "phase":
            out[name] = PHASE_VALUES[int(np.argmax(part))]
        elif name == "source":
            out[name] = SOURCE_VALUES[int(np.argmax(part))]
        else:
            out[name] = bool(part[0])
    return out


# ---------------------------------------------------------------- full state (not for agents)
#: (name, start, length) of the full-information state vector returned by ``env.state()``:
#: :data:`conquian_env.layout.STATE`
STATE_LAYOUT: tuple[tuple[str, int, int], ...] = tuple((name, start, size) for name, start, size, _ in STATE.rows())
#: length of the state vector, from its layout
STATE_SIZE = STATE.size
#: start slot of each part of the state vector, by name
STATE_AT = dict(STATE.offsets)


def encode_state(state: GameState) -> np.ndarray:
    """Full-information vector (``int8``, shape ``(STATE_SIZE,)``): both hands and the stock order."""
    face = state.face_up
    at = STATE_AT
    bits = (
        state.hands[0] << at["hand_0"]
        | state.hands[1] << at["hand_1"]
        | state.melds[0] << at["meld_0"]
        | state.melds[1] << at["meld_1"]
        | state.dead << at["dead"]
        | state.chosen << at["pending_meld"]
        | state.discards[0] << at["discards_0"]
        | state.discards[1] << at["discards_1"]
        | state.refusals[0] << at["refusals_0"]
        | state.refusals[1] << at["refusals_1"]
        | 1 << (at["phase"] + state.phase)
    )
    if state.phase != GAME_OVER:
        bits |= 1 << (at["player_to_move"] + state.player)
    if face >= 0:
        bits |= 1 << (at["face_up"] + face) | 1 << (at["source"] + 1 + state.source) | 1 << (at["owner"] + state.owner)
        if state.passed:
            bits |= 1 << at["passed"]
    else:
        bits |= 1 << at["source"]
    if state.forced and state.phase == MELD:
        bits |= 1 << at["forced"]
    bits |= rules_bits(state.rules, at)
    if state.winner >= 0:
        bits |= 1 << (at["winner"] + state.winner)
    out = bits_to_array(bits, STATE_SIZE).copy()
    stock_at = at["stock_position"]
    for pos, card in enumerate(state.stock[state.stock_pos :]):
        out[stock_at + card] = pos + 1
    return out


def decode_state(vector: Any) -> dict[str, Any]:
    """Named parts of a full-information state vector (for debugging and tests)."""
    vec = np.asarray(vector)
    if vec.shape != (STATE_SIZE,):
        raise ValueError(f"a state vector has shape ({STATE_SIZE},), got {vec.shape}")
    out: dict[str, Any] = {}
    for name, start, length in STATE_LAYOUT:
        part = vec[start : start + length]
        if name == "stock_position":
            order = sorted((int(v), i) for i, v in enumerate(part) if v > 0)
            out["stock"] = [CARD_NAMES[i] for _, i in order]
        elif length == NUM_CARDS:
            out[name] = _cards_in(part)
        else:
            out[name] = [int(x) for x in part]
    return out


__all__ = [
    "OBS_LAYOUT",
    "OBS_SIZE",
    "STATE_LAYOUT",
    "STATE_SIZE",
    "action_mask",
    "bits_to_array",
    "decode",
    "decode_state",
    "encode",
    "encode_state",
    "observation_bits",
]
