"""The card head of a self-play network: one small network shared by the cards, scoring each hand card.

A plain MLP must learn for each of the 40 cards on its own which of its inputs say that this card
is worth keeping; discards are where it falls short of the rule-based players (the network agrees
with ``greedy`` on 67% of its discards against 88% of its other moves when cloning it).  The card
head shares that knowledge between cards: each hand card ``c`` gets two numbers from the same
weights, added to the trunk's logits of its two actions (``meld c`` and ``discard c``):

    z_c = ReLU(W_in x_c + b_in + rank[rank(c)] + suit[suit(c)] + W_ctx h)
    z_c = ReLU(W_mid z_c + b_mid)
    (meld, discard)_c = W_out z_c + b_out

``x_c`` is card ``c``'s slot of every card plane of the input (every 40-wide piece of its layout:
the hand, the melds, the discards, and with ``"potential"`` the meld-potential planes), ``h`` the
trunk's last hidden layer.  Cards not in the hand get nothing (their actions are illegal anyway).
The torch twin that trains it is :class:`conquian_train.learner.Network` with ``head="cards"``;
``tests/test_card_head.py`` holds the two equal.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conquian_env.actions import DISCARD_BASE, MELD_BASE
from conquian_env.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS
from conquian_env.model_layouts import feature_set

from ..model_files import check_weights

#: a self-play network's heads: the trunk's logits alone, or with a card head
HEADS = ("mlp", "cards")

#: a card head's arrays and their number of dimensions (the names in model and snapshot files)
HEAD_ARRAYS = {"card_in_w": 2, "card_in_b": 1, "card_rank": 2, "card_suit": 2, "card_ctx_w": 2, "card_mid_w": 2,
               "card_mid_b": 1, "card_out_w": 2, "card_out_b": 1}  # fmt: skip
#: the plane of the input that says which cards are in the hand
HAND_PLANE = "own_hand"
#: the ranks and suits of the cards (card = suit * 10 + rank)
CARD_RANK = np.arange(NUM_CARDS) % NUM_RANKS
CARD_SUIT = np.arange(NUM_CARDS) // NUM_RANKS


def card_planes(features: str) -> tuple[str, ...]:
    """The card planes of the feature set ``features``: its pieces one slot per card, in order."""
    return tuple(p.name for p in feature_set(features).layout.pieces if p.size == NUM_CARDS)


def plane_columns(features: str, planes: tuple[str, ...] | list[str]) -> np.ndarray:
    """``(len(planes), 40)``: the columns of this version's ``features`` vector holding each plane's cards
    (a ``ValueError`` names a plane this version does not have)."""
    offsets = feature_set(features).layout.offsets
    missing = [p for p in planes if p not in offsets]
    if missing:
        raise ValueError(f"the card head reads the planes {missing}, which this version's {features!r} input "
                         f"does not have (it has {list(card_planes(features))})")  # fmt: skip
    return np.array([np.arange(NUM_CARDS) + offsets[p] for p in planes], dtype=np.int64)


class CardHead:
    """A card head's weights (``arrays``: :data:`HEAD_ARRAYS` by name, float32) reading ``planes`` (piece
    names) out of this version's ``features`` vector, after a trunk of ``trunk_width`` outputs.

    :meth:`apply` adds its scores to a batch of logits; the shapes are checked here (a ``ValueError``
    names the array and the shape it should have)."""

    def __init__(self, arrays: dict[str, np.ndarray], features: str, planes: tuple[str, ...] | list[str],
                 trunk_width: int):  # fmt: skip
        names = sorted(arrays)
        if names != sorted(HEAD_ARRAYS):
            raise ValueError(f"a card head has the arrays {sorted(HEAD_ARRAYS)}, got {names}")
        self.planes = tuple(planes)
        if HAND_PLANE not in self.planes:
            raise ValueError(f"a card head reads the {HAND_PLANE!r} plane among its planes, got {list(self.planes)}")
        self.features = features
        self.columns = plane_columns(features, self.planes)  # (P, 40)
        self.hand = self.columns[self.planes.index(HAND_PLANE)]
        a = {k: np.asarray(v, np.float32) for k, v in arrays.items()}
        width = a["card_in_w"].shape[0] if a["card_in_w"].ndim == 2 else -1
        want = {"card_in_w": (width, len(self.planes)), "card_in_b": (width,), "card_rank": (NUM_RANKS, width),
                "card_suit": (NUM_SUITS, width), "card_ctx_w": (width, trunk_width), "card_mid_w": (width, width),
                "card_mid_b": (width,), "card_out_w": (2, width), "card_out_b": (2,)}  # fmt: skip
        for k, shape in want.items():
            if a[k].shape != shape:
                raise ValueError(f"card head array {k} has shape {a[k].shape}, expected {shape} (a head {width} wide "
                                 f"reading {len(self.planes)} planes after a trunk {trunk_width} wide)")  # fmt: skip
        self.arrays = a
        self.width = width
        self._embed = a["card_rank"][CARD_RANK] + a["card_suit"][CARD_SUIT] + a["card_in_b"]  # (40, width)

    def scores(self, x: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, cards, scores (n, 2))``: the hand cards of the batch ``x`` (this version's vectors) with
        the trunk's last layer ``h``, and their (meld, discard) scores."""
        a = self.arrays
        rows, cards = np.nonzero(x[:, self.hand] > 0.5)
        planes = x[rows[:, None], self.columns.T[cards]]  # (n, P)
        z = planes @ a["card_in_w"].T + self._embed[cards] + (h @ a["card_ctx_w"].T)[rows]
        np.maximum(z, 0.0, out=z)
        z = z @ a["card_mid_w"].T + a["card_mid_b"]
        np.maximum(z, 0.0, out=z)
        return rows, cards, z @ a["card_out_w"].T + a["card_out_b"]

    def apply(self, x: np.ndarray, h: np.ndarray, logits: np.ndarray) -> np.ndarray:
        """``logits`` (``(n, 85)``, changed in place and returned) plus each hand card's scores on its
        ``meld`` and ``discard`` actions."""
        rows, cards, s = self.scores(x, h)
        logits[rows, MELD_BASE + cards] += s[:, 0]
        logits[rows, DISCARD_BASE + cards] += s[:, 1]
        return logits

    def named_layers(self) -> list[tuple[str, str, np.ndarray, np.ndarray, str]]:
        """The head as :func:`agents.model_files.check_weights` bounds it: the input layer (its rank and
        suit rows and the trunk's part folded into the bias's bound), the middle and the output."""
        a = self.arrays
        w_in = np.concatenate([a["card_in_w"], a["card_rank"].T, a["card_suit"].T, a["card_ctx_w"]], axis=1)
        return [("card_in_w", "card_in_b", w_in, a["card_in_b"], "ReLU"),
                ("card_mid_w", "card_mid_b", a["card_mid_w"], a["card_mid_b"], "ReLU"),
                ("card_out_w", "card_out_b", a["card_out_w"], a["card_out_b"], "Identity")]  # fmt: skip

    def meta(self) -> dict[str, Any]:
        """What a model file's meta says of the head."""
        return {"head": "cards", "card_planes": list(self.planes)}


def check_network(where: str, named: list[tuple[str, str, np.ndarray, np.ndarray, str]], input_bound: float,
                  head: CardHead | None) -> None:  # fmt: skip
    """Bound a network read from a file (:func:`agents.model_files.check_weights`): its ``named`` layers
    over inputs within ``input_bound``, and its card ``head`` over its planes (within ``input_bound``), the
    rank and suit one-hots and the trunk's outputs as bounded there."""
    if head is None:
        check_weights(where, named, input_bound)
        return
    trunk = check_weights(where, named[:-1], input_bound)
    check_weights(where, named[-1:], trunk)
    inputs = np.concatenate([np.full(len(head.planes), float(input_bound)), np.ones(NUM_RANKS + NUM_SUITS), trunk])
    check_weights(where, head.named_layers(), inputs)
