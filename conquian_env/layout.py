"""Vector layouts, declared once: ordered ``(name, size)`` pieces, every offset derived.

A :class:`Layout` is an ordered list of named pieces that tile a flat vector, as
OpenSpiel's Python games declare their observation tensors.  Everything else is derived
from the pieces: each piece's offset and slice, the vector's size, and a stable
:attr:`Layout.hash` of the names and sizes (not of the descriptions) that model files
carry (:class:`FeatureSet`).  The layouts of the project are declared here:

* :data:`OBSERVATION`: the agent's observation (:mod:`conquian_env.observation` encodes it,
  the batched engine's kernels too);
* :data:`STATE`: the full-information ``state()`` vector (never an agent's input);
* :data:`MELD_FEATURES`: the observation followed by the ``"meld"`` features
  (:mod:`agents.scorer.features` encodes them, and its compiled twin);
* :data:`KERNEL_ROW`: the columns of a batched-engine row (:mod:`conquian_env.vector`),
  from the fields of :data:`conquian_env.game.FIELDS` in order with the legal-move cache
  before the stock.

Adding an observation feature is a piece here plus one encoder per engine.  numba
compiles module globals into its on-disk cache as constants and invalidates that cache
only when the kernel's own file changes, so the compiled kernels do not read these
layouts at import: :func:`kernel_constants` lists the constants they need, and
``python -m conquian_env.layout --write`` writes them into a generated block of
``conquian_env/kernels.py`` (changing that file, which throws the stale compiled code
away).  ``python -m conquian_env.layout --check`` (and ``tests/test_layout.py``, and
``kernels.py`` itself at import) checks that the block matches this declaration.

A model file stores its :class:`FeatureSet` as :meth:`FeatureSet.stamp`: the feature set's
name, its layout's hash and its pieces.  :func:`feature_set_of_model` reads it on load (a file
that stores only the hash, or no stamp at all, through the frozen table of the layouts that
have shipped, :data:`SHIPPED_LAYOUTS`) and matches the model's pieces by name and size
against this version's (:func:`input_columns`): a piece added since (a new rule variant's, a
new feature) is left out of the model's input, so every model keeps loading and playing as it
was trained; a piece it knows that is gone or resized refuses it, naming the piece.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .actions import NUM_ACTIONS
from .cards import NUM_CARDS
from .game import FIELD_WIDTH, FIELDS, STOCK, STOCK_SIZE
from .rules import FLAG_BITS, Rules

_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


@dataclass(frozen=True)
class Piece:
    """One named part of a vector: ``size`` consecutive slots; ``doc`` says what they hold."""

    name: str
    size: int
    doc: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"a layout piece's name is a lower-case identifier (a-z, 0-9, _), got {self.name!r}")
        if isinstance(self.size, bool) or not isinstance(self.size, Integral) or self.size < 1:
            raise ValueError(f"layout piece {self.name!r}: size must be a positive int, got {self.size!r}")
        object.__setattr__(self, "size", int(self.size))  # a numpy integer becomes a plain int
        if not isinstance(self.doc, str):
            raise ValueError(f"layout piece {self.name!r}: doc must be a str, got {type(self.doc).__name__}")


class Layout:
    """An ordered list of :class:`Piece` tiling a flat vector, with no gap or overlap.

    ``Layout("observation", [("own_hand", 40, "own hand"), ...])``: pieces as ``Piece`` or
    ``(name, size)`` / ``(name, size, doc)`` tuples, names unique.  Read it with
    :attr:`size`, :meth:`offset`, :meth:`slice`, :attr:`offsets`, :meth:`rows`; it is
    immutable and compares (and hashes) by its pieces' names and sizes.
    """

    def __init__(self, name: str, pieces: Iterable[Piece | Sequence[Any]]):
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"a layout's name is a lower-case identifier, got {name!r}")
        built = tuple(p if isinstance(p, Piece) else Piece(*p) for p in pieces)
        if not built:
            raise ValueError(f"layout {name!r} needs at least one piece")
        seen: set[str] = set()
        offsets: dict[str, int] = {}
        at = 0
        for piece in built:
            if piece.name in seen:
                raise ValueError(f"layout {name!r} names the piece {piece.name!r} twice")
            seen.add(piece.name)
            offsets[piece.name] = at
            at += piece.size
        self._name = name
        self._pieces = built
        self._offsets = MappingProxyType(offsets)
        self._by_name = MappingProxyType({p.name: p for p in built})
        self._size = at
        text = ";".join(f"{p.name}:{p.size}" for p in built)
        self._hash = hashlib.sha256(text.encode("ascii")).hexdigest()[:16]

    @property
    def name(self) -> str:
        """What the vector is (``"observation"``, ``"meld"``, ...); not part of :attr:`hash`."""
        return self._name

    @property
    def pieces(self) -> tuple[Piece, ...]:
        return self._pieces

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self._pieces)

    @property
    def size(self) -> int:
        """Length of the vector: the sum of the pieces' sizes."""
        return self._size

    @property
    def offsets(self) -> Mapping[str, int]:
        """First slot of each piece, by name (read-only)."""
        return self._offsets

    @property
    def hash(self) -> str:
        """16 hex digits of SHA-256 over the pieces' names and sizes in order: it changes when
        a piece is added, removed, renamed, resized or moved, and not when a ``doc`` is reworded."""
        return self._hash

    def piece(self, name: str) -> Piece:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"layout {self._name!r} has no piece {name!r}; it has {', '.join(self.names)}") from None

    def offset(self, name: str) -> int:
        """First slot of the piece ``name``."""
        self.piece(name)
        return self._offsets[name]

    def slice(self, name: str) -> slice:
        """``vector[layout.slice(name)]`` is the piece ``name``."""
        start = self.offset(name)
        return slice(start, start + self._by_name[name].size)

    def rows(self) -> tuple[tuple[str, int, int, str], ...]:
        """``(name, start, size, doc)`` of each piece, in order (a table for docs and tests)."""
        return tuple((p.name, self._offsets[p.name], p.size, p.doc) for p in self._pieces)

    def extend(self, name: str, pieces: Iterable[Piece | Sequence[Any]]) -> Layout:
        """A new layout ``name``: this one's pieces followed by ``pieces``."""
        return Layout(name, (*self._pieces, *pieces))

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from its pieces: the read-only mappings it keeps cannot be pickled, and a bot
        # that holds a layout is handed to worker processes (spawn) by pickle
        return (Layout, (self._name, self._pieces))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Layout):
            return NotImplemented
        return [(p.name, p.size) for p in self._pieces] == [(p.name, p.size) for p in other._pieces]

    def __hash__(self) -> int:
        return hash(self._hash)

    def __repr__(self) -> str:
        return f"Layout({self._name!r}, {len(self._pieces)} pieces, size {self._size}, hash {self._hash})"


# ---------------------------------------------------------------- the layouts
def rule_pieces() -> list[Piece]:
    """One 1-wide piece per field of :class:`~conquian_env.rules.Rules`, named after the field,
    in field order (1 when that variant is on; its doc the field's help text).  The observation
    and the state vector hold them together, so a new variant adds its piece with no edit here
    (and moves the pieces after them: the state's ``winner``)."""
    return [Piece(f.name, 1, f"1 when the variant is on: {f.metadata['help']}") for f in dataclasses.fields(Rules)]


#: the agent's observation (conquian_env.observation; the kernels' encoder)
OBSERVATION = Layout(
    "observation",
    [
        ("own_hand", NUM_CARDS, "own hand (cards still held, including those being laid in a meld)"),
        ("own_meld", NUM_CARDS, "own meld on the table"),
        ("opponent_meld", NUM_CARDS, "opponent's meld on the table"),
        ("face_up", NUM_CARDS, "the face-up card (all zero when there is none)"),
        ("dead", NUM_CARDS, "the dead pile (refused cards, public)"),
        ("pending_meld", NUM_CARDS, "cards laid so far in the meld being made (by whoever is melding)"),
        ("opponent_discards", NUM_CARDS, "cards the opponent discarded (this game)"),
        ("opponent_refusals", NUM_CARDS, "cards the opponent refused (this game)"),
        ("own_discards", NUM_CARDS, "cards the observing player discarded"),
        ("own_refusals", NUM_CARDS, "cards the observing player refused"),
        ("stock_size", STOCK_SIZE, "stock size, thermometer"),
        ("own_hand_size", 11, "own hand size, one-hot 0..10"),
        ("opponent_hand_size", 11, "opponent's hand size, one-hot 0..10"),
        ("phase", 6, "my offer / my meld / my discard / my force / opponent to move / over"),
        ("source", 5, "none / turned by me / turned by opp / discarded by me / discarded by opp"),
        ("passed", 1, "turned card already refused by its turner"),
        ("forced", 1, "the meld being made is a forced take"),
        *rule_pieces(),
    ],
)

#: the full-information state vector of ``env.state()`` (both hands, the stock order)
STATE = Layout(
    "state",
    [
        ("hand_0", NUM_CARDS),
        ("hand_1", NUM_CARDS),
        ("meld_0", NUM_CARDS),
        ("meld_1", NUM_CARDS),
        ("face_up", NUM_CARDS),
        ("dead", NUM_CARDS),
        ("pending_meld", NUM_CARDS),
        ("discards_0", NUM_CARDS),
        ("discards_1", NUM_CARDS),
        ("refusals_0", NUM_CARDS),
        ("refusals_1", NUM_CARDS),
        ("stock_position", NUM_CARDS, "1 = top of the stock ... 20; 0 = not in the stock"),
        ("player_to_move", 2),
        ("phase", 5, "offer, meld, discard, force, over"),
        ("source", 3, "none, turned, discarded"),
        ("owner", 2),
        ("passed", 1),
        ("forced", 1),
        *rule_pieces(),
        ("winner", 2),
    ],
)

#: the observation followed by the "meld" features (agents.scorer.features; float32)
MELD_FEATURES = OBSERVATION.extend(
    "meld",
    [
        ("live", NUM_CARDS, "live cards: not seen by the player (opponent's hidden hand or stock)"),
        ("fits_own_meld", NUM_CARDS, "cards that fit the player's own meld with no hand card"),
        ("fits_opponent_meld", NUM_CARDS, "cards that fit the opponent's meld with no hand card"),
        ("hand_quality", NUM_CARDS, "quality of each hand card (the greedy evaluation)"),
        ("combines_with_hand", NUM_CARDS, "cards not held that make a 3-card set or run with hand cards"),
        ("winning_cards", NUM_CARDS, "live cards that would let hand + meld split into melds"),
        ("discard_value", NUM_CARDS, "discard phase: each hand card's greedy value, relative to the best"),
        ("lay_plan", NUM_CARDS, "meld phase: the hand cards of the greedy lay-down plan still to lay"),
        ("greedy_action", NUM_ACTIONS, "the greedy bot's choice, one-hot"),
        ("scalars", 4, "take margin, take possible, hand evaluation, winning cards"),
    ],
)


def _kernel_row() -> Layout:
    pieces = []
    for field in FIELDS:
        if field.kind == STOCK:
            pieces.append(("legal_cards", 1, "legal meld ids or discard cards"))
            pieces.append(("legal_other", 1, "bit k: action 80 + k"))
        pieces.append((field.name, FIELD_WIDTH[field.kind]))
    return Layout("kernel_row", pieces)


#: the columns of one game's row in the batched engine (conquian_env.vector.VectorGame.state)
KERNEL_ROW = _kernel_row()


# ---------------------------------------------------------------- feature sets of models
@dataclass(frozen=True)
class FeatureSet:
    """What a learned policy reads: a name (``"raw"``, ``"meld"``) and the layout of its input.

    :data:`FEATURE_SETS` holds this version's; :func:`feature_set_of_model` gives a model file's,
    whose layout is the pieces the model was trained on (this version's, or older ones that
    :meth:`columns` picks out of this version's vector)."""

    name: str
    layout: Layout

    @property
    def size(self) -> int:
        return self.layout.size

    def stamp(self) -> dict[str, Any]:
        """What a model file stores about its input: ``{"feature_set": name, "layout_hash": hash,
        "pieces": [[name, size], ...]}`` (the pieces, so that a later version with more pieces
        can still read it)."""
        return {
            "feature_set": self.name,
            "layout_hash": self.layout.hash,
            "pieces": [[p.name, p.size] for p in self.layout.pieces],
        }

    @property
    def current(self) -> FeatureSet:
        """This version's feature set of the same name."""
        return feature_set(self.name)

    def columns(self) -> tuple[int, ...] | None:
        """Where this feature set's inputs lie in this version's vector of the same name
        (:func:`input_columns`): None when the layouts are the same."""
        return input_columns(self.layout, self.current.layout)


#: the feature sets a model can be trained on, by name
FEATURE_SETS: Mapping[str, FeatureSet] = MappingProxyType(
    {"raw": FeatureSet("raw", OBSERVATION), "meld": FeatureSet("meld", MELD_FEATURES)}
)

#: every layout a model file has been written with, by its hash: ``(feature set, pieces)``.
#: Frozen: a file that stores only its layout's hash (written before files stored their pieces,
#: the shipped models among them) is read through this table, so an entry is never changed or
#: removed (``tests/test_layout.py`` recomputes each hash from its pieces).
SHIPPED_LAYOUTS: Mapping[str, tuple[str, tuple[tuple[str, int], ...]]] = MappingProxyType(
    {
        "f4cae69b8caa0557": (
            "raw",
            (
                ("own_hand", 40), ("own_meld", 40), ("opponent_meld", 40), ("face_up", 40), ("dead", 40),
                ("pending_meld", 40), ("opponent_discards", 40), ("opponent_refusals", 40), ("own_discards", 40),
                ("own_refusals", 40), ("stock_size", 20), ("own_hand_size", 11), ("opponent_hand_size", 11),
                ("phase", 6), ("source", 5), ("passed", 1), ("forced", 1), ("forcing", 1),
            ),
        ),
        "2975cb6140054b04": (
            "meld",
            (
                ("own_hand", 40), ("own_meld", 40), ("opponent_meld", 40), ("face_up", 40), ("dead", 40),
                ("pending_meld", 40), ("opponent_discards", 40), ("opponent_refusals", 40), ("own_discards", 40),
                ("own_refusals", 40), ("stock_size", 20), ("own_hand_size", 11), ("opponent_hand_size", 11),
                ("phase", 6), ("source", 5), ("passed", 1), ("forced", 1), ("forcing", 1),
                ("live", 40), ("fits_own_meld", 40), ("fits_opponent_meld", 40), ("hand_quality", 40),
                ("combines_with_hand", 40), ("winning_cards", 40), ("discard_value", 40), ("lay_plan", 40),
                ("greedy_action", 85), ("scalars", 4),
            ),
        ),
    }
)  # fmt: skip
#: the layout of a model file with no stamp at all (written before models carried one), by its input size
UNSTAMPED_LAYOUTS: Mapping[int, str] = MappingProxyType({456: "f4cae69b8caa0557", 865: "2975cb6140054b04"})


class LayoutMismatchError(ValueError):
    """A model file's stored feature set or layout is not one this version reads."""


def feature_set(name: str) -> FeatureSet:
    """The feature set called ``name``; ``ValueError`` naming the known ones otherwise."""
    try:
        return FEATURE_SETS[name]
    except (KeyError, TypeError):
        raise ValueError(f"feature set must be one of {', '.join(map(repr, FEATURE_SETS))}, got {name!r}") from None


def feature_set_for_size(size: int) -> FeatureSet:
    """This version's feature set whose input has ``size`` slots (a network built in this process)."""
    for fs in FEATURE_SETS.values():
        if fs.size == size:
            return fs
    known = ", ".join(f"{fs.size} ({fs.name!r})" for fs in FEATURE_SETS.values())
    raise ValueError(f"a Conquian policy reads {known} inputs, got {size}")


def input_columns(model: Layout, current: Layout, *, where: str = "the model") -> tuple[int, ...] | None:
    """Where the inputs of a model trained on ``model`` lie in a ``current`` vector: None when the
    two layouts are the same (the model reads the vector as it is), else the slot of ``current``
    of each of the model's inputs, in the model's order.

    Pieces are matched by name: each piece the model knows must be in ``current`` with the same
    size, else :class:`LayoutMismatchError` names the missing and the resized ones.  A piece of
    ``current`` that the model does not know (a rule variant or feature added since) is left
    out of its input: the model plays as it was trained, blind to it."""
    if model == current:
        return None
    missing = [p.name for p in model.pieces if p.name not in current.offsets]
    resized = [
        f"{p.name} ({p.size} -> {current.piece(p.name).size})"
        for p in model.pieces
        if p.name in current.offsets and current.piece(p.name).size != p.size
    ]
    if missing or resized:
        faults = "; ".join(
            part for part in (missing and f"missing {', '.join(missing)}", resized and f"resized {', '.join(resized)}")
            if part
        )  # fmt: skip
        raise LayoutMismatchError(
            f"{where} was trained on pieces that this version's {current.name!r} layout no longer has as they were "
            f"({faults}): retrain it, or load it with the version that wrote it"
        )
    columns: list[int] = []
    for p in model.pieces:
        start = current.offsets[p.name]
        columns.extend(range(start, start + p.size))
    return tuple(columns)


def _stored_layout(name: str, digest: str, pieces: Any, where: str) -> Layout:
    """The layout a stamp names: its stored pieces (checked against its hash), or for a stamp
    without pieces the frozen :data:`SHIPPED_LAYOUTS` entry of its hash."""
    current = FEATURE_SETS[name]
    if pieces is None:
        shipped = SHIPPED_LAYOUTS.get(digest)
        if shipped is None or shipped[0] != name:
            raise LayoutMismatchError(
                f"{where} was trained on the feature set {name!r} with layout {digest}, but this version's {name!r} "
                f"has layout {current.layout.hash} and no record of {digest}'s pieces (the file stores none): "
                "retrain it, or load it with the version that wrote it"
            )
        return Layout(current.layout.name, shipped[1])
    if not isinstance(pieces, list) or not all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and type(p[1]) is int for p in pieces
    ):
        raise LayoutMismatchError(f"{where}: the stored pieces must be a list of [name, size] pairs, got {pieces!r}")
    try:
        layout = Layout(current.layout.name, [tuple(p) for p in pieces])
    except ValueError as err:
        raise LayoutMismatchError(f"{where}: the stored pieces are not a layout ({err})") from None
    if layout.hash != digest:
        raise LayoutMismatchError(
            f"{where}: the stored pieces hash to {layout.hash}, not to the stored layout_hash {digest} (the stamp was "
            "edited or damaged)"
        )
    return layout


def feature_set_of_model(
    stamp: Mapping[str, Any] | None, input_size: int | None, *, where: str = "the model"
) -> FeatureSet:
    """The feature set of a model file: the layout it was trained on, checked against this version's.

    ``stamp``: what the file stored (:meth:`FeatureSet.stamp`), or None for a file written
    before models carried one: then the input size tells the layout
    (:data:`UNSTAMPED_LAYOUTS`).  A stamp names its feature set and layout hash and, since
    files store them, the layout's pieces; a stamp without pieces is read through the frozen
    :data:`SHIPPED_LAYOUTS`.  ``input_size`` (None: not checked) must be the layout's size.

    The result's layout is the model's; each of its pieces must be in this version's layout of
    that name with the same size (:func:`input_columns`), and :meth:`FeatureSet.columns` picks
    the model's inputs out of this version's vector.  When the model's layout is this
    version's the result is :data:`FEATURE_SETS`' own.  Anything else is a
    :class:`LayoutMismatchError` naming the file's feature set, layout or pieces."""
    if stamp is None:
        digest = UNSTAMPED_LAYOUTS.get(input_size) if input_size is not None else None
        if digest is None:
            known = ", ".join(f"{size} ({SHIPPED_LAYOUTS[d][0]!r})" for size, d in UNSTAMPED_LAYOUTS.items())
            raise ValueError(f"a Conquian policy with no stored feature set reads {known} inputs, got {input_size}")
        name = SHIPPED_LAYOUTS[digest][0]
        layout = Layout(FEATURE_SETS[name].layout.name, SHIPPED_LAYOUTS[digest][1])
    else:
        if not isinstance(stamp, Mapping):
            raise LayoutMismatchError(f"{where}: the stored feature set must be a mapping, got {type(stamp).__name__}")
        name, digest = stamp.get("feature_set"), stamp.get("layout_hash")
        if not isinstance(name, str) or not isinstance(digest, str):
            raise LayoutMismatchError(
                f"{where}: the stored feature set needs 'feature_set' and 'layout_hash' strings, got {dict(stamp)!r}"
            )
        if name not in FEATURE_SETS:
            have = ", ".join(f"{fs.name!r} (layout {fs.layout.hash})" for fs in FEATURE_SETS.values())
            raise LayoutMismatchError(
                f"{where} reads the feature set {name!r} (layout {digest}), which this version does not know; "
                f"it has {have}"
            )
        layout = _stored_layout(name, digest, stamp.get("pieces"), where)
        if input_size is not None and input_size != layout.size:
            raise LayoutMismatchError(
                f"{where} says feature set {name!r} (layout {digest}, {layout.size} inputs) but its network reads "
                f"{input_size}"
            )
    current = FEATURE_SETS[name]
    input_columns(layout, current.layout, where=where)  # every piece it knows is here, as it was
    return current if layout == current.layout else FeatureSet(name, layout)


# ---------------------------------------------------------------- the kernels' constants
def kernel_constants() -> dict[str, int]:
    """The layout constants the compiled kernels (``conquian_env/kernels.py``) need, in order:
    the row's columns (``H0`` ... ``STOCK0``, ``NUM_COLUMNS``), the bits of the ``RULES`` column
    (``RULE_FORCING`` ..., :data:`conquian_env.rules.FLAG_BITS`) and the observation's offsets
    (``OBS_SIZE``, ``O_OWN_MELD`` ...; the rule pieces as one run: ``O_RULES``, ``N_RULES``)."""
    row, obs = KERNEL_ROW.offsets, OBSERVATION.offsets
    rules = Rules.field_names()
    # the encoder sets slot O_RULES + k from bit k of the RULES column: field k's piece and flag
    if not all(obs[name] == obs[rules[0]] + k and FLAG_BITS[name] == 1 << k for k, name in enumerate(rules)):
        raise ValueError("the observation's rule pieces must lie together in field order, field k's flag bit k")
    return {
        "H0": row["hands"],
        "H1": row["hands"] + 1,
        "M0": row["melds"],
        "M1": row["melds"] + 1,
        "DI0": row["discards"],
        "DI1": row["discards"] + 1,
        "RF0": row["refusals"],
        "RF1": row["refusals"] + 1,
        "DEAD": row["dead"],
        "CHOSEN": row["chosen"],
        "FACE": row["face_up"],
        "SOURCE": row["source"],
        "OWNER": row["owner"],
        "PASSED": row["passed"],
        "PLAYER": row["player"],
        "PHASE": row["phase"],
        "WINNER": row["winner"],
        "FORCED": row["forced"],
        "RULES": row["rules"],
        **{"RULE_" + name.upper(): bit for name, bit in FLAG_BITS.items()},  # the bits of RULES
        "MOVES": row["move_count"],
        "SPOS": row["stock_pos"],
        "LCARDS": row["legal_cards"],
        "LMISC": row["legal_other"],
        "STOCK0": row["stock"],
        "NUM_COLUMNS": KERNEL_ROW.size,
        "OBS_SIZE": OBSERVATION.size,
        "O_OWN_HAND": obs["own_hand"],
        "O_OWN_MELD": obs["own_meld"],
        "O_OPP_MELD": obs["opponent_meld"],
        "O_FACE": obs["face_up"],
        "O_DEAD": obs["dead"],
        "O_PENDING": obs["pending_meld"],
        "O_OPP_DISC": obs["opponent_discards"],
        "O_OPP_REF": obs["opponent_refusals"],
        "O_OWN_DISC": obs["own_discards"],
        "O_OWN_REF": obs["own_refusals"],
        "O_STOCK": obs["stock_size"],
        "O_OWN_SIZE": obs["own_hand_size"],
        "O_OPP_SIZE": obs["opponent_hand_size"],
        "O_PHASE": obs["phase"],
        "O_SOURCE": obs["source"],
        "O_PASSED": obs["passed"],
        "O_FORCED": obs["forced"],
        "O_RULES": obs[rules[0]],
        "N_RULES": len(rules),
    }


#: the lines that open and close the generated block in conquian_env/kernels.py
GENERATED_BEGIN = "# ---- generated by `python -m conquian_env.layout --write` from conquian_env/layout.py: do not edit"
GENERATED_END = "# ---- end of the generated layout constants"
#: the kernels' source file that holds the generated block
KERNELS_FILE = Path(__file__).with_name("kernels.py")


def generated_block() -> str:
    """The text of the generated block (its opening and closing lines included)."""
    lines = [GENERATED_BEGIN, f"# layouts: kernel_row {KERNEL_ROW.hash}, observation {OBSERVATION.hash}"]
    lines += [f"{name} = {value}" for name, value in kernel_constants().items()]
    lines.append(GENERATED_END)
    return "\n".join(lines) + "\n"


def _split(text: str, path: Path) -> tuple[str, str, str]:
    begin, end = text.find(GENERATED_BEGIN), text.find(GENERATED_END)
    if begin < 0 or end < begin:
        raise ValueError(f"{path} has no generated layout block (the lines {GENERATED_BEGIN!r} ... {GENERATED_END!r})")
    stop = text.index("\n", end) + 1
    return text[:begin], text[begin:stop], text[stop:]


def check_generated(path: Path = KERNELS_FILE) -> bool:
    """Whether ``path``'s generated block is :func:`generated_block`."""
    return _split(path.read_text(encoding="utf-8"), path)[1] == generated_block()


def write_generated(path: Path = KERNELS_FILE) -> bool:
    """Rewrite ``path``'s generated block from the layouts; True when it changed."""
    text = path.read_text(encoding="utf-8")
    head, block, tail = _split(text, path)
    if block == generated_block():
        return False
    path.write_text(head + generated_block() + tail, encoding="utf-8")
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conquian_env.layout",
        description="Check or rewrite the layout constants generated into conquian_env/kernels.py.",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the block (default: only check it)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the block is out of date (the default)")
    args = parser.parse_args(argv)
    if args.write:
        changed = write_generated()
        print(f"{KERNELS_FILE}: {'rewritten' if changed else 'already up to date'}")
        return 0
    if check_generated():
        print(f"{KERNELS_FILE}: the generated layout constants match conquian_env/layout.py")
        return 0
    print(f"{KERNELS_FILE}: out of date: run python -m conquian_env.layout --write", file=sys.stderr)
    return 1


__all__ = [
    "FEATURE_SETS",
    "KERNEL_ROW",
    "MELD_FEATURES",
    "OBSERVATION",
    "STATE",
    "SHIPPED_LAYOUTS",
    "UNSTAMPED_LAYOUTS",
    "FeatureSet",
    "Layout",
    "LayoutMismatchError",
    "Piece",
    "check_generated",
    "feature_set",
    "feature_set_for_size",
    "feature_set_of_model",
    "generated_block",
    "input_columns",
    "kernel_constants",
    "write_generated",
]

if __name__ == "__main__":
    raise SystemExit(main())
