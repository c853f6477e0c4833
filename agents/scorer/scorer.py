"""The action scorer: a small network that scores each legal action from that action's own
features (spec ``scorer``, the network alone).

A flat policy network has one output per action id (85 of them) and must learn separately
that discarding the 7 of clubs and the 7 of hearts are alike.  The scorer instead describes
each *candidate* by the cards it touches and runs one shared multilayer perceptron over
every candidate of the position; the highest score is played.  It decides the offers (take
or refuse the face-up card) and the discards, where the search's edge over greedy lies; the
meld phase (laying down the cards of a take) and the force decision of RULES.md section 7 are
greedy's, as in the expert-iteration labels it learns from (:mod:`conquian_train.recipes.exit`).

Inputs of a candidate (:func:`candidate_features`, all from the ``"meld"`` feature vector of
:mod:`agents.scorer.features`, i.e. from the player's view alone; greedy's own choice is one of them):

======  ======  ==================================================================
slot    length  contents
======  ======  ==================================================================
0       18      the card's 18 per-card channels: the 10 card blocks of the raw
                observation (own hand, melds, face-up, dead, pending meld, both
                players' discards and refusals) and the 8 meld-feature blocks
                (live, fits own / opponent's meld, quality, combines, winning
                cards, discard value, lay plan)
18      76      the same 18 channels for the cards of ranks -2, -1, +1, +2 in the
                card's suit, each followed by a flag saying the card exists
94      18      the 18 channels summed over the three other cards of the rank
112     4       kind of candidate: discard / take / refuse, and greedy's choice
116     60      the position: stock size, both hand sizes, phase, source, flags and
                the 4 offer scalars of the meld features
======  ======  ==================================================================

The blocks come from the pieces of :data:`conquian_env.layout.MELD_FEATURES`: each piece
``NUM_CARDS`` wide is a card channel (:data:`CARD_PIECES`, in the layout's order), each other
piece but greedy's choice is part of the position (:data:`POSITION_PIECES`); a piece added to
the layout lands in the candidate's inputs of a scorer trained from then on with no edit here,
and ``tests/test_scorer.py`` keeps the table above equal to the derived sizes.  A scorer reads
the pieces it was trained on: :class:`CandidateLayout` builds the table from a scorer's own meld
layout, each piece found by name in this version's vector (:data:`INPUTS`: today's), so a piece
added since is left out of its inputs and it plays as it was trained.

A discard's card is the discarded card, a take's the face-up card; a refusal has no card
(its card slots are zero).  The model file is a plain ``.npz``: the weights ``w0, b0, w1, b1, ...``
and a JSON ``meta`` string, which since models carry their input holds the feature set
(``"meld"``), its layout hash and its pieces (:mod:`conquian_env.layout`): a file with another
feature set, or whose pieces this version no longer has as they were, is refused, naming them; a
file with only the hash is read through the frozen table of the layouts that shipped, and a file
without them (written before) as the ``"meld"`` features of then (:data:`PRE_STAMP_LAYOUT`), as
it always was.  :func:`load_scorer` reads it as untrusted data
(:mod:`agents.model_files`): the archive's directory and each array's header are checked before
any data is decompressed, with caps on every size, and the weights are bounded so that the
network's scores are finite; a file we read never runs code and a wrong, tampered or oversized
one gets a ``ModelFileError`` naming what is wrong.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from conquian_env.actions import DISCARD_BASE, NUM_ACTIONS, REFUSE, TAKE
from conquian_env.cards import NUM_CARDS
from conquian_env.game import DISCARD, OFFER
from conquian_env.layout import MELD_FEATURES, OBSERVATION, Layout
from conquian_env.model_layouts import FEATURE_SETS, FeatureSet, feature_set_of_model, input_columns
from conquian_env.view import PlayerView

from ..base import Agent
from ..catalog import bot
from ..greedy.greedy import GreedyAgent
from ..model_files import (
    ModelFileError,
    best_legal,
    check_weights,
    read_layer_archive,
    write_npz,
)
from .features import FEATURE_LAYOUT, FeatureEncoder

__all__ = [
    "CANDIDATE_SIZE",
    "CARD_BLOCKS",
    "CARD_INPUTS",
    "CARD_PIECES",
    "CARD_SLICES",
    "CHANNELS",
    "FEATURE_AT",
    "INPUTS",
    "KIND_SLOT",
    "POSITION_PIECES",
    "POSITION_SLICES",
    "POSITION_SLOT",
    "DEFAULT_SCORER",
    "FORMAT",
    "FORMAT_POOLED",
    "GREEDY_SLOT",
    "ActionScorer",
    "CandidateLayout",
    "ScorerAgent",
    "candidate_features",
    "candidate_layout",
    "load_scorer",
]

#: the shipped scorer (``train.py exit``'s network, see docs/training.md)
DEFAULT_SCORER = Path(__file__).resolve().parents[1] / "data" / "conquian_scorer.npz"
#: the ``format`` of a scorer file's meta (a network that scores each candidate alone)
FORMAT = "conquian-action-scorer/1"
#: the ``format`` of a deep-sets scorer's file: one layer's outputs are pooled over the position's
#: candidates (meta ``pool_after``), so that each candidate's score also sees the others
FORMAT_POOLED = "conquian-action-scorer/2"
#: the most candidates a position has (10 discards + 1 from a take's hand; 2 at an offer)
MAX_CANDIDATES = 12

# The candidate's input layout (the table in the module docstring), shared with the compiled
# twin (agents.scorer.scorer_kernels), derived from the pieces of a meld layout (this version's,
# conquian_env.layout.MELD_FEATURES, or the one a scorer file was trained on): a piece NUM_CARDS
# wide is a per-card block; every other piece but greedy's choice describes the position.
#: the piece of the meld features that is greedy's choice (one-hot over the actions): the kind slots read it
_GREEDY_PIECE = "greedy_action"
#: the piece whose card a take's candidate describes
_FACE_UP_PIECE = "face_up"


def _runs(columns: np.ndarray) -> tuple[tuple[int, int], ...]:
    """``columns`` as ``(start, stop)`` slices, a run of consecutive columns joined into one slice."""
    runs: list[list[int]] = []
    for c in columns.tolist():
        if runs and runs[-1][1] == c:
            runs[-1][1] = c + 1
        else:
            runs.append([c, c + 1])
    return tuple((a, b) for a, b in runs)


class CandidateLayout:
    """Where a scorer's candidate inputs come from: the table of the module docstring for a
    scorer trained on the meld layout ``layout`` (a :class:`~conquian_env.layout.Layout`), read
    out of the meld feature vector laid out as ``current`` (this version's,
    :data:`conquian_env.layout.MELD_FEATURES`).

    The channels are ``layout``'s pieces ``NUM_CARDS`` wide, in its order; the position is its
    other pieces but greedy's choice.  Each is found by name in this version's vector
    (:func:`conquian_env.model_layouts.input_columns` has checked that each is there with its size), so
    a scorer trained before a piece was added reads its own inputs, blind to the new piece.
    :data:`INPUTS` is this version's own."""

    def __init__(self, layout: Layout, current: Layout = MELD_FEATURES):
        input_columns(layout, current, where="a scorer")  # every piece is here, as it was
        for name in (_FACE_UP_PIECE, _GREEDY_PIECE):
            if name not in layout.offsets:
                raise ValueError(f"a scorer's meld layout needs the piece {name!r}; {layout!r} has none")
        at = current.offsets
        self.layout = layout
        self.current = current
        #: the names of the per-card blocks (the channels, in order)
        self.card_pieces = tuple(p.name for p in layout.pieces if p.size == NUM_CARDS)
        #: the names of the pieces copied into the position's inputs, in order
        self.position_pieces = tuple(p.name for p in layout.pieces if p.size != NUM_CARDS and p.name != _GREEDY_PIECE)
        self.channels = len(self.card_pieces)
        self.card_inputs = self.channels * 6 + 4  # channels, 4 run neighbours (+ a flag each), the rank's others
        self.kind_slot = self.card_inputs
        self.position_slot = self.kind_slot + 4
        self.greedy_slot = self.kind_slot + 3
        #: the first slot of each channel in this version's meld feature vector
        self.card_starts = np.array([at[name] for name in self.card_pieces], np.int64)
        #: the slots of this version's vector that hold the card channels, channel by channel
        self.card_columns = (self.card_starts[:, None] + np.arange(NUM_CARDS)).ravel()
        #: the slots of this version's vector copied into the position's inputs, in order
        self.position_columns = np.array(
            [at[name] + k for name in self.position_pieces for k in range(layout.piece(name).size)], np.int64
        )
        self.position_slices = _runs(self.position_columns)
        self.card_slices = _runs(self.card_columns)
        self.size = self.position_slot + len(self.position_columns)
        self.face_up = at[_FACE_UP_PIECE]
        self.greedy = at[_GREEDY_PIECE]
        #: the compiled twin's form (:mod:`agents.scorer.scorer_kernels`): ``[channels, position
        #: inputs, face-up slot, greedy slot, each channel's first slot..., each position slot...]``
        self.kernel_map = np.concatenate(
            [[self.channels, len(self.position_columns), self.face_up, self.greedy], self.card_starts,
             self.position_columns]
        ).astype(np.int64)  # fmt: skip

    def __repr__(self) -> str:
        return f"CandidateLayout({self.layout.hash}, {self.channels} channels, {self.size} inputs)"


@functools.lru_cache(maxsize=16)
def candidate_layout(layout: Layout, current: Layout = MELD_FEATURES) -> CandidateLayout:
    """The :class:`CandidateLayout` of a scorer trained on the meld layout ``layout``, reading the
    vector laid out as ``current`` (one per pair)."""
    return CandidateLayout(layout, current)


#: this version's candidate inputs (a scorer trained now reads these)
INPUTS = candidate_layout(MELD_FEATURES)
#: where each block of the ``"meld"`` feature vector starts (:data:`agents.scorer.features.FEATURE_LAYOUT`)
FEATURE_AT = {name: start for name, start, _ in FEATURE_LAYOUT}
#: the names of the per-card blocks (the channels, in order): the raw observation's, then the meld features'
CARD_PIECES = INPUTS.card_pieces
#: the per-card blocks of the raw observation (own hand .. own refusals), the first channels
CARD_BLOCKS = sum(1 for p in OBSERVATION.pieces if p.size == NUM_CARDS)
#: per-card channels: the raw observation's card blocks, then the meld features' card blocks (live .. lay plan)
CHANNELS = INPUTS.channels
#: inputs about the candidate's card: its channels, its 4 run neighbours (+ a flag each), the rank's other suits
CARD_INPUTS = INPUTS.card_inputs
#: the first of the 4 kind slots (discard, take, refuse, greedy's choice)
KIND_SLOT = INPUTS.kind_slot
#: the first of the position's inputs
POSITION_SLOT = INPUTS.position_slot
#: the input slot that says the candidate is greedy's choice
GREEDY_SLOT = INPUTS.greedy_slot
#: the names of the pieces copied into the position's inputs, in order
POSITION_PIECES = INPUTS.position_pieces
#: the ``(start, stop)`` slices of the feature vector copied into the position's inputs
POSITION_SLICES = INPUTS.position_slices
#: the ``(start, stop)`` slices of the feature vector that hold the card channels, in order
CARD_SLICES = INPUTS.card_slices
CANDIDATE_SIZE = INPUTS.size
_DISCARDS = np.arange(DISCARD_BASE, DISCARD_BASE + NUM_CARDS)
#: the meld layout of a scorer file written before files stored theirs (conquian_env.model_layouts.SHIPPED_LAYOUTS)
PRE_STAMP_LAYOUT = "2975cb6140054b04"


def candidate_features(
    features: np.ndarray, masks: np.ndarray, inputs: CandidateLayout = INPUTS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidates of a batch of positions: ``features`` ``(N, FEATURE_SIZE)`` meld feature
    vectors and ``masks`` ``(N, 85)`` legal-action masks give ``x`` ``(N, 12, inputs.size)``,
    ``valid`` ``(N, 12)`` and ``actions`` ``(N, 12)`` (the action id of each candidate, -1 where
    there is none).  Only discards, takes and refusals are candidates.  ``inputs``: the
    candidate layout of the scorer that reads them (default: this version's)."""
    features = np.asarray(features, dtype=np.float32)
    masks = np.asarray(masks, dtype=bool)
    if features.ndim != 2 or features.shape[1] != inputs.current.size:
        raise ValueError(f"candidate_features needs (N, {inputs.current.size}) meld features, got shape "
                         f"{features.shape}")  # fmt: skip
    if masks.shape != (len(features), NUM_ACTIONS):
        raise ValueError(f"candidate_features needs (N, {NUM_ACTIONS}) masks for N={len(features)}, got {masks.shape}")
    n, channels, kind = len(features), inputs.channels, inputs.kind_slot
    cards = features[:, inputs.card_columns].reshape(n, channels, 4, 10)
    # a layout may list no position piece (the loader accepts it, the compiled twin plays it): no columns then
    position = np.concatenate([features[:, a:b] for a, b in inputs.position_slices] or [features[:, :0]], axis=1)
    face_up, greedy = inputs.face_up, inputs.greedy

    def card_part(rows: np.ndarray, card: np.ndarray) -> np.ndarray:
        suit, rank = card // 10, card % 10
        parts = [cards[rows, :, suit, rank]]
        for step in (-2, -1, 1, 2):
            r = rank + step
            ok = (r >= 0) & (r < 10)
            parts += [cards[rows, :, suit, np.clip(r, 0, 9)] * ok[:, None], ok[:, None].astype(np.float32)]
        parts.append(cards[rows, :, :, rank].sum(axis=2) - cards[rows, :, suit, rank])
        return np.concatenate(parts, axis=1)

    x = np.zeros((n, MAX_CANDIDATES, inputs.size), np.float32)
    valid = np.zeros((n, MAX_CANDIDATES), bool)
    actions = np.full((n, MAX_CANDIDATES), -1, np.int64)
    slot = np.zeros(n, np.int64)
    for action in (*_DISCARDS.tolist(), TAKE, REFUSE):
        rows = np.flatnonzero(masks[:, action])
        if not len(rows):
            continue
        at = slot[rows]
        if at.max() >= MAX_CANDIDATES:
            raise ValueError(f"a position with more than {MAX_CANDIDATES} candidates (row {rows[at.argmax()]})")
        if action < TAKE:
            x[rows, at, : inputs.card_inputs] = card_part(rows, np.full(len(rows), action - DISCARD_BASE))
            x[rows, at, kind] = 1.0
        elif action == TAKE:
            x[rows, at, : inputs.card_inputs] = card_part(
                rows, features[rows, face_up : face_up + NUM_CARDS].argmax(axis=1)
            )
            x[rows, at, kind + 1] = 1.0
        else:
            x[rows, at, kind + 2] = 1.0
        x[rows, at, kind + 3] = features[rows, greedy + action]
        x[rows, at, inputs.position_slot :] = position[rows]
        valid[rows, at] = True
        actions[rows, at] = action
        slot[rows] += 1
    return x, valid, actions


class ActionScorer:
    """The network: ``layers`` of (weights ``(in, out)``, bias ``(out,)``), ReLU between them,
    one output (the candidate's score).

    ``pool_after=k`` makes it a deep-sets network: layer ``k``'s outputs (after the ReLU) ``h`` of
    each candidate are joined by their mean and their maximum over the position's candidates, so
    layer ``k + 1`` reads ``[h, mean, max]`` (three times layer ``k``'s width) and a candidate's
    score also sees what the others offer; ``None``: each candidate is scored alone.

    ``inputs``: the :class:`CandidateLayout` the network reads (default :data:`INPUTS`, this
    version's; a file trained on an older meld layout loads with its own)."""

    def __init__(
        self,
        layers: list[tuple[np.ndarray, np.ndarray]],
        meta: dict[str, Any] | None = None,
        pool_after: int | None = None,
        inputs: CandidateLayout = INPUTS,
    ):
        self.layers = [(np.asarray(w, np.float32), np.asarray(b, np.float32)) for w, b in layers]
        self.meta = dict(meta or {})
        self.inputs = inputs
        self.pool_after = _check_pool(pool_after, len(self.layers), "ActionScorer")
        _check_layers(self.layers, "ActionScorer", self.pool_after, inputs.size)

    def __call__(self, x: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
        """Scores of candidates ``x`` (``(..., inputs.size)``): shape ``x.shape[:-1]``.  A pooled
        network pools over the axis before the last (one position's candidates: ``x`` at least 2-D),
        only over the candidates ``valid`` marks (``x.shape[:-1]``; ``None``: all of them)."""
        x = np.asarray(x, np.float32)
        if self.pool_after is not None:
            if x.ndim < 2:
                raise ValueError(f"a pooled scorer scores a position's candidates together: x needs (..., n, "
                                 f"{self.inputs.size}), got shape {x.shape}")  # fmt: skip
            if valid is not None:
                valid = np.asarray(valid, bool)
                if valid.shape != x.shape[:-1]:
                    raise ValueError(f"valid has shape {valid.shape}, expected {x.shape[:-1]}")
        for i, (w, b) in enumerate(self.layers):
            x = x @ w + b
            if i < len(self.layers) - 1:
                x = np.maximum(x, 0.0)
            if i == self.pool_after:
                x = _pool(x, valid)
        return x[..., 0]

    def candidate_scores(self, features: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One position's candidates (their action ids, ascending) and their scores."""
        x, valid, actions = candidate_features(features[None], np.asarray(mask, bool)[None], self.inputs)
        return actions[0][valid[0]], self(x[0][valid[0]])

    def action_scores(self, features: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """One position's scores by action id (85 of them; -inf where not a candidate)."""
        actions, scores = self.candidate_scores(features, mask)
        out = np.full(NUM_ACTIONS, -np.inf, np.float32)
        out[actions] = scores
        return out

    def save(self, path: str | Path, meta: dict[str, Any] | None = None) -> Path:
        """Write the model file (atomically: a temporary file, then a rename)."""
        path = Path(path)
        info = {**self.meta, **(meta or {}), "format": FORMAT, "candidate_size": self.inputs.size,
                "hidden": [int(w.shape[1]) for w, _ in self.layers[:-1]],
                **FeatureSet("meld", self.inputs.layout).stamp()}  # fmt: skip
        info.pop("pool_after", None)
        if self.pool_after is not None:
            info.update(format=FORMAT_POOLED, pool_after=self.pool_after)
        arrays = {f"w{i}": w for i, (w, _) in enumerate(self.layers)}
        arrays.update({f"b{i}": b for i, (_, b) in enumerate(self.layers)})
        write_npz(path, {"meta": np.array(json.dumps(info, sort_keys=True)), **arrays}, compressed=False)
        self.meta = info
        return path


def _pool(h: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    """``[h, mean, max]`` of each candidate: the mean and maximum of ``h`` (``(..., n, width)``, at
    least 0) over the axis of the candidates, over the ``valid`` ones only (none valid: zeros)."""
    if valid is None:
        mean, top = h.mean(axis=-2, keepdims=True), h.max(axis=-2, keepdims=True)
    else:
        m = valid[..., None]
        count = np.maximum(m.sum(axis=-2, keepdims=True), 1)
        mean = np.where(m, h, 0.0).sum(axis=-2, keepdims=True) / count
        top = np.where(m, h, 0.0).max(axis=-2, keepdims=True)  # h >= 0 after the ReLU: 0 is below every valid h
    shape = h.shape
    return np.concatenate([h, np.broadcast_to(mean, shape), np.broadcast_to(top, shape)], axis=-1).astype(np.float32)


def _check_pool(pool_after: Any, count: int, where: str) -> int | None:
    if pool_after is None:
        return None
    if isinstance(pool_after, bool) or not isinstance(pool_after, (int, np.integer)) or not 0 <= pool_after < count - 1:
        raise ModelFileError(f"{where}: pool_after {pool_after!r} is not a hidden layer's index (an integer in "
                             f"[0, {count - 2}] for {count} layers, or none)")  # fmt: skip
    return int(pool_after)


def _check_layers(layers: list[tuple[np.ndarray, np.ndarray]], where: str, pool_after: int | None = None,
                  width: int = CANDIDATE_SIZE) -> None:  # fmt: skip
    if not layers:
        raise ModelFileError(f"{where}: no layers")
    for i, (w, b) in enumerate(layers):
        if i and i - 1 == pool_after:
            width *= 3  # [h, mean, max]
        if w.ndim != 2 or w.shape[0] != width:
            raise ModelFileError(f"{where}: w{i} has shape {w.shape}, expected ({width}, n)"
                                 + (f" (layer {pool_after}'s outputs pooled: [h, mean, max])" if i - 1 == pool_after
                                    else ""))  # fmt: skip
        if b.shape != (w.shape[1],):
            raise ModelFileError(f"{where}: b{i} has shape {b.shape}, expected ({w.shape[1]},)")
        if not (np.isfinite(w).all() and np.isfinite(b).all()):
            raise ModelFileError(f"{where}: w{i} or b{i} holds a NaN or an infinity")
        width = w.shape[1]
    if width != 1:
        raise ModelFileError(f"{where}: the last layer has {width} outputs, expected 1 (a score)")


#: the most layers a scorer file may have
MAX_LAYERS = 16
#: the most bytes one weight array of a scorer file may hold (uncompressed)
MAX_ARRAY_BYTES = 1 << 26
#: the most bytes a scorer file's arrays may hold together (uncompressed)
MAX_FILE_BYTES = 1 << 28
#: the most bytes of a scorer file's JSON meta (4 per character)
MAX_META_BYTES = 1 << 16
#: every input of a candidate lies within ±this (card channels in [-1, 1]; the rank's other
#: three cards summed: within ±3), the range :func:`agents.model_files.check_weights` bounds for
INPUT_BOUND = 3.0
_MEMBER = re.compile(r"([wb])(\d{1,3})\.npy")


def _member_cap(name: str) -> int | None:
    if name == "meta.npy":
        return MAX_META_BYTES + 1024  # + the .npy header
    m = _MEMBER.fullmatch(name)
    if m and int(m.group(2)) < MAX_LAYERS and (m.group(2) == "0" or not m.group(2).startswith("0")):
        return MAX_ARRAY_BYTES + 1024
    return None


def load_scorer(path: str | Path) -> ActionScorer:
    """Read and check a scorer file (plain arrays, no pickles): a :class:`~agents.model_files.ModelFileError`
    (a ``ValueError``) names the file and the fault.

    The archive's directory is checked first (names ``meta``, ``w0, b0, ...``, at most
    :data:`MAX_LAYERS` layers, each member's uncompressed size capped by :data:`MAX_ARRAY_BYTES`,
    all by :data:`MAX_FILE_BYTES`), each array's ``.npy`` header (dtype, shape, size) before its
    data, and the weights are bounded (:func:`agents.model_files.check_weights`): a file that
    loads scores every position with finite numbers."""
    path = Path(path)
    where = f"scorer file {str(path)!r}"

    def check_meta(meta: dict[str, Any]) -> CandidateLayout:
        if meta.get("format") not in (FORMAT, FORMAT_POOLED):
            raise ModelFileError(f"{where}: format {meta.get('format')!r}, expected {FORMAT!r} or {FORMAT_POOLED!r}")
        if (meta["format"] == FORMAT_POOLED) != ("pool_after" in meta):
            raise ModelFileError(f"{where}: a {meta['format']!r} file " + ("needs" if meta["format"] == FORMAT_POOLED
                                 else "has no") + " a 'pool_after' entry in its meta")  # fmt: skip
        inputs = _inputs_of(meta, where)
        if meta.get("candidate_size") != inputs.size:
            raise ModelFileError(f"{where}: made for {meta.get('candidate_size')!r} inputs per candidate, its "
                                 f"layout ({inputs.layout.hash}) builds {inputs.size}")  # fmt: skip
        return inputs

    meta, layers, inputs, _ = read_layer_archive(
        path, where, _member_cap, max_layers=MAX_LAYERS, max_total=MAX_FILE_BYTES, max_meta=MAX_META_BYTES,
        max_array=MAX_ARRAY_BYTES, made_by="train.py exit", what="a scorer", check_meta=check_meta,
    )  # fmt: skip
    count = len(layers)
    pool_after = _check_pool(meta.get("pool_after"), count, where)
    _check_layers(layers, where, pool_after, inputs.size)
    check_weights(where, [(f"w{i}", f"b{i}", w.T, b, "ReLU+pool" if i == pool_after else "ReLU")
                          for i, (w, b) in enumerate(layers)], INPUT_BOUND)  # fmt: skip
    return ActionScorer(layers, meta, pool_after, inputs)


def _inputs_of(meta: dict[str, Any], where: str) -> CandidateLayout:
    """The candidate layout of a scorer file: its stamp's meld layout
    (:func:`conquian_env.model_layouts.feature_set_of_model`: the pieces it stores, or the frozen
    layout of its hash), matched against this version's; a file with no stamp predates it and reads
    :data:`PRE_STAMP_LAYOUT`."""
    if not {"feature_set", "layout_hash", "pieces"} & set(meta):
        stamp: dict[str, Any] = {"feature_set": "meld", "layout_hash": PRE_STAMP_LAYOUT}
    else:
        stamp = {k: meta.get(k) for k in ("feature_set", "layout_hash")}
        if "pieces" in meta:
            stamp["pieces"] = meta["pieces"]
        if stamp["feature_set"] in FEATURE_SETS and stamp["feature_set"] != "meld":
            raise ModelFileError(f"{where} says it reads the feature set {stamp['feature_set']!r} "
                                 f"(layout {stamp['layout_hash']}); a scorer reads 'meld' "
                                 f"(layout {MELD_FEATURES.hash})")  # fmt: skip
    try:
        model = feature_set_of_model(stamp, None, where=where)
        return candidate_layout(model.layout, model.current.layout)
    except ValueError as err:
        raise ModelFileError(str(err)) from err


@bot(
    "scorer",
    "the action scorer alone (a network from train.py exit scoring each legal action); no path: the shipped one",
    positional="[PATH.npz]",
)
class ScorerAgent(Agent):
    """The network alone (spec ``scorer[:PATH.npz]``; no path: the shipped scorer): at an offer
    or a discard it plays the legal candidate the scorer rates highest; the meld phase and the
    force decision are greedy's.  Deterministic; about a millisecond per decision."""

    name = "scorer"

    def __init__(self, path: str | Path | None = None, seed: int | None = None):
        self.path = Path(path) if path else DEFAULT_SCORER
        self.scorer = load_scorer(self.path)
        self.encoder = FeatureEncoder()
        self.greedy = GreedyAgent()
        self.name = "scorer" if path is None else f"scorer:{path}"
        self.last_stats: dict[int, float] = {}  # the scores of the last scored decision, by action

    @classmethod
    def from_scorer(cls, scorer: ActionScorer, name: str = "scorer") -> ScorerAgent:
        """The bot of a scorer in memory (a network being trained)."""
        agent = cls.__new__(cls)
        agent.path, agent.scorer, agent.name = None, scorer, name
        agent.encoder, agent.greedy, agent.last_stats = FeatureEncoder(), GreedyAgent(), {}
        return agent

    def reset(self, player: int, seed: int | None = None) -> None:
        self.encoder.reset()
        self.greedy.reset(player, seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        mask = np.asarray(action_mask, dtype=bool)
        if view.phase not in (OFFER, DISCARD) or mask.sum() < 2:
            return self.greedy.act(observation, action_mask, view)
        actions, scores = self.scorer.candidate_scores(self.encoder.encode(view), mask)
        if not len(actions):
            return self.greedy.act(observation, action_mask, view)
        self.last_stats = {int(a): float(s) for a, s in zip(actions, scores, strict=True)}
        # the best candidate, ties to the lowest action id; a NaN or infinite score: the same rule
        # with NaN lowest and a NonFiniteScoresWarning (agents.model_files.best_legal), never an illegal move
        full = np.full(NUM_ACTIONS, -np.inf)
        full[actions] = scores
        candidates = np.zeros(NUM_ACTIONS, bool)
        candidates[actions] = True
        return best_legal(full, candidates, self.name)
