"""Which layout a model file was trained on, and where its inputs lie in this version's vector.

A model file stores its :class:`FeatureSet` as :meth:`FeatureSet.stamp`: the feature set's
name, its layout's hash and its pieces.  :func:`feature_set_of_model` reads it on load (a file
that stores only the hash, or no stamp at all, through the frozen table of the layouts that
have shipped, :data:`SHIPPED_LAYOUTS`) and matches the model's pieces by name and size
against this version's (:func:`input_columns`): a piece added since (a new rule variant's, a
new feature) is left out of the model's input, so every model keeps loading and playing as it
was trained; a piece it knows that is gone or resized refuses it, naming the piece.  The
layouts themselves are :mod:`conquian_env.layout`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .layout import MELD_FEATURES, OBSERVATION, POTENTIAL, Layout


# ---------------------------------------------------------------- feature sets of models
@dataclass(frozen=True)
class FeatureSet:
    """What a learned policy reads: a name (``"raw"``, ``"meld"``, ``"potential"``) and the layout of its input.

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
    {
        "raw": FeatureSet("raw", OBSERVATION),
        "meld": FeatureSet("meld", MELD_FEATURES),
        "potential": FeatureSet("potential", POTENTIAL),
    }
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


__all__ = [
    "FEATURE_SETS",
    "FeatureSet",
    "LayoutMismatchError",
    "SHIPPED_LAYOUTS",
    "UNSTAMPED_LAYOUTS",
    "feature_set",
    "feature_set_for_size",
    "feature_set_of_model",
    "input_columns",
]
