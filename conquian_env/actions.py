"""The fixed action ids of Conquian and their text form.

``Discrete(85)``, the same for both players and every phase:

=========  =============================================  ==============
ids        action                                         phase
=========  =============================================  ==============
0-39       add hand card ``i`` to the meld being made     meld
40-79      discard hand card ``i - 40``                   discard
80         take the offered card (start melding)          offer
81         refuse the offered card                        offer
82         finish melding                                 meld
83         force the opponent to take the card refused    force (variant)
84         do not force                                   force (variant)
=========  =============================================  ==============

Text forms: ``"meld 7H"``, ``"discard KD"``, ``"take"``, ``"refuse"``, ``"finish"``,
``"force"``, ``"no force"``.  :func:`str_to_action` accepts these (case-insensitive,
``"no-force"``/``"noforce"``/``"pass"`` for 84) and raises ``ValueError`` otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .cards import CARD_NAMES, NUM_CARDS, parse_card

MELD_BASE = 0
DISCARD_BASE = 40
TAKE = 80
REFUSE = 81
FINISH = 82
FORCE = 83
NO_FORCE = 84
NUM_ACTIONS = 85

_SIMPLE = {TAKE: "take", REFUSE: "refuse", FINISH: "finish", FORCE: "force", NO_FORCE: "no force"}
_SIMPLE_PARSE = {
    "take": TAKE,
    "refuse": REFUSE,
    "finish": FINISH,
    "force": FORCE,
    "no force": NO_FORCE,
    "no-force": NO_FORCE,
    "noforce": NO_FORCE,
    "pass": NO_FORCE,
}


def meld_action(card: int) -> int:
    """Action id that adds hand card ``card`` to the meld being made."""
    return MELD_BASE + card


def discard_action(card: int) -> int:
    """Action id that discards hand card ``card``."""
    return DISCARD_BASE + card


def action_to_str(action: int) -> str:
    """Text of an action id, e.g. ``26 -> "meld 7H"``, ``80 -> "take"``."""
    a = int(action)
    if 0 <= a < NUM_CARDS:
        return "meld " + CARD_NAMES[a]
    if DISCARD_BASE <= a < DISCARD_BASE + NUM_CARDS:
        return "discard " + CARD_NAMES[a - DISCARD_BASE]
    if a in _SIMPLE:
        return _SIMPLE[a]
    raise ValueError(f"unknown action {action!r}: action ids run from 0 to {NUM_ACTIONS - 1}")


def str_to_action(text: str) -> int:
    """Action id of a text form such as ``"meld 7H"``, ``"discard kd"`` or ``"take"``."""
    words = " ".join(str(text).strip().lower().split())
    if words in _SIMPLE_PARSE:
        return _SIMPLE_PARSE[words]
    verb, _, card = words.partition(" ")
    if verb in ("meld", "discard") and card:
        try:
            idx = parse_card(card.upper())
        except ValueError as err:
            raise ValueError(f"bad action {text!r}: {err}") from None
        return (MELD_BASE if verb == "meld" else DISCARD_BASE) + idx
    raise ValueError(
        f"unknown action {text!r}: expected 'take', 'refuse', 'finish', 'force', 'no force', "
        "'meld <card>' or 'discard <card>' (cards like 7H, JS)"
    )


def as_action_id(action: Any) -> int:
    """``action`` as an action id, or ``ValueError`` saying what is wrong.

    Only integers are actions (Python or numpy, or a 0-d / 1-element numpy integer array,
    as vector-env libraries pass them): ``80.7``, ``True`` or ``"80"`` is not action 80.
    """
    if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
        a = int(action)
    elif isinstance(action, np.ndarray) and action.shape in ((), (1,)) and np.issubdtype(action.dtype, np.integer):
        a = int(action.reshape(()))
    else:
        raise ValueError(f"an action is an integer id from 0 to {NUM_ACTIONS - 1}, got {action!r}")
    if not 0 <= a < NUM_ACTIONS:
        raise ValueError(f"action {a} is out of range: action ids run from 0 to {NUM_ACTIONS - 1}")
    return a
