"""The belief model of the opponent's hidden hand: for each card the player cannot see, the
probability that the opponent holds it, from the player's view alone.

The search (spec ``search``, :class:`agents.search.pimc.BeliefSearchAgent`) deals the unseen cards
from it; :mod:`conquian_train.recipes.belief` generates the games it learns from and fits it;
``benchmarks/bench_belief.py`` measures it against uniform deals and the plausibility filter
(docs/bots.md, "The belief model").

**Inputs.**  One row of features per unseen card (:data:`agents.search.belief_kernels.FEATURE_LAYOUT`),
all read from the view row of :func:`agents.search.pimc.view_row`: the cards near it (same rank, one
and two ranks away in its suit) among the opponent's discards, its refusals of cards that did not
fit its meld alone, its meld, the player's meld and hand, the dead pile and the other unseen
cards; whether it fits either meld alone; its partner pairs (both unseen, one discarded by the
opponent, one refused by it, live for the opponent); the opponent's discard or refusal face up
now; and the position (moves, stock turned, hidden-hand size, how many cards are unseen, the
opponent's meld, discards and refusals, and the uniform prior as a logit).  It reads the public
record as the view holds it now (which cards, not in which order), and the latest card only.

**Model.**  One hidden ReLU layer with weights shared across cards gives a logit per card; the
logits are shifted by one constant so that the probabilities add up to the opponent's hidden-hand
size (:func:`agents.search.belief_kernels.exact_count_logits`).  The forward pass runs compiled
(:func:`agents.search.belief_kernels.forward`); :func:`forward_numpy` is its twin (the tests hold them
equal to 1e-6) and the fit's.

**File.**  A plain ``.npz`` read as untrusted data by :mod:`agents.model_files` (the archive's
directory and each array's header checked before any data is decompressed): ``w0 (F, H)``,
``b0 (H,)``, ``w1 (H, 1)``, ``b1 (1,)`` (float64, finite, bounded; ``H`` at most :data:`MAX_HIDDEN`)
and ``meta`` (a JSON string naming the format, the feature layout and its hash).  Anything else is
a :class:`~agents.model_files.ModelFileError` naming the file and what is wrong: a file read never
runs code.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from conquian_env.extras import missing

from ..model_files import ModelFileError, check_archive, check_weights, open_archive, read_meta, read_npy, write_npz

try:
    from .belief_kernels import FEATURE_LAYOUT, NUM_FEATURES
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "agents.search.belief (the belief model)") from None

#: the shipped belief model (fitted by ``python -m conquian_train.recipes.belief fit``)
DEFAULT_BELIEF = Path(__file__).resolve().parents[1] / "data" / "conquian_belief.npz"
FORMAT = "conquian-belief/1"
#: the arrays of a model file, besides ``meta``
WEIGHT_NAMES = ("w0", "b0", "w1", "b1")


def layout_hash(layout: tuple = FEATURE_LAYOUT) -> str:
    """A short hash of a feature layout (names and sizes in order): a model file names the layout
    it was fitted on, and one fitted on another is refused."""
    text = json.dumps([[name, int(size)] for name, size in layout])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def forward_numpy(x: np.ndarray, w0: np.ndarray, b0: np.ndarray, w1: np.ndarray, b1: np.ndarray) -> np.ndarray:
    """The logit of each row of ``X``: ``relu(x @ w0 + b0) @ w1 + b1`` (the compiled forward's twin)."""
    return np.maximum(x @ w0 + b0, 0.0) @ w1[:, 0] + b1[0]


class BeliefModel:
    """A loaded belief model (:func:`load_belief`); ``meta``: what the file says about itself."""

    def __init__(self, w0: np.ndarray, b0: np.ndarray, w1: np.ndarray, b1: np.ndarray, meta: dict[str, Any]):
        self.w0, self.b0, self.w1, self.b1 = w0, b0, w1, b1
        self.meta = meta

    @property
    def weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self.w0, self.b0, self.w1, self.b1

    @property
    def hidden(self) -> int:
        return int(self.w0.shape[1])

    def pool_logits(self, row: np.ndarray, pool: np.ndarray, n_opp: int) -> np.ndarray:
        """The logits of the cards of ``pool`` (a view row, its sorted pool, the hidden-hand size:
        :func:`agents.search.pimc.view_row`), shifted to the exact count (compiled)."""
        from .belief_kernels import pool_logits

        return pool_logits(row, pool, int(n_opp), *self.weights)

    def probabilities(self, view: Any) -> np.ndarray:
        """``p[c]``: the probability that the opponent of ``view``'s player holds card ``c`` (0 for
        every card the player can see; the probabilities add up to the opponent's hidden-hand size)."""
        from .rows import view_row

        row, pool, n_opp = view_row(view)
        out = np.zeros(40)
        if len(pool):
            with np.errstate(over="ignore"):
                out[pool] = 1.0 / (1.0 + np.exp(-self.pool_logits(row, pool, n_opp)))
        return out


def save_belief(path: str | Path, weights: tuple[np.ndarray, ...], meta: dict[str, Any]) -> Path:
    """Write a model file atomically (complete or absent after a kill); ``meta`` gains the format
    and the feature layout."""
    path = Path(path)
    w0, b0, w1, b1 = (np.asarray(w, dtype=np.float64) for w in weights)
    meta = {**meta, "format": FORMAT, "features": [[n, s] for n, s in FEATURE_LAYOUT], "layout": layout_hash()}
    arrays = {"w0": w0, "b0": b0, "w1": w1, "b1": b1, "meta": np.array(json.dumps(meta))}
    return write_npz(path, arrays, compressed=False)


#: the most hidden units a belief model file may have (the shipped one has 32)
MAX_HIDDEN = 1024
#: the most bytes of a belief file's JSON meta (4 per character; the shipped one's is 2 KB)
MAX_META_BYTES = 1 << 16
#: every feature of a card lies within ±this (the logit prior within ±6.9, the rest within 0 .. 3),
#: the range :func:`agents.model_files.check_weights` bounds the network for
INPUT_BOUND = 10.0
_NPY_HEADER = 1024  # room for an .npy member's header beside its data


def _member_caps() -> dict[str, int]:
    widths = {"w0": NUM_FEATURES * MAX_HIDDEN, "b0": MAX_HIDDEN, "w1": MAX_HIDDEN, "b1": 1}
    return {**{f"{n}.npy": 8 * size for n, size in widths.items()}, "meta.npy": MAX_META_BYTES}


def load_belief(path: str | Path | None = None) -> BeliefModel:
    """Read and check a belief model file (``None``: the shipped one) as untrusted data
    (:mod:`agents.model_files`): the archive's directory first (exactly ``w0, b0, w1, b1, meta``,
    each member's uncompressed size capped before a byte of it is decompressed), each array's
    ``.npy`` header (dtype, shape, size) before its data, at most :data:`MAX_HIDDEN` hidden units,
    float64 weights that are finite and bounded (:func:`agents.model_files.check_weights`), a
    strict JSON meta naming the format and the feature layout.  Anything else is a
    :class:`~agents.model_files.ModelFileError` (a ``ValueError``) naming the file and what is
    wrong; no pickle is read."""
    path = Path(DEFAULT_BELIEF if path is None else path)
    where = f"belief model {str(path)!r}"
    if not path.is_file():
        what = "a folder, not a model file" if path.is_dir() else "no such file"
        raise ModelFileError(f"{where}: {what} (give a .npz of conquian-train belief fit)")
    caps = _member_caps()
    expected = sorted(n[: -len(".npy")] for n in caps)
    with open_archive(path, where, "readable .npz without pickles") as zf:
        members = check_archive(
            zf, where, lambda name: caps[name] + _NPY_HEADER if name in caps else None,
            max_members=len(caps), max_total=sum(caps.values()) + len(caps) * _NPY_HEADER,
        )  # fmt: skip
        if set(members) != set(caps):
            got = sorted(n[: -len(".npy")] if n.endswith(".npy") else n for n in members)
            raise ModelFileError(f"{where}: holds arrays {got}, expected exactly {expected}")
        arrays = {
            name: read_npy(
                zf, members[f"{name}.npy"], where, kinds="f", max_bytes=caps[f"{name}.npy"], ndims=(ndim,)
            )  # fmt: skip
            for name, ndim in (("w0", 2), ("b0", 1), ("w1", 2), ("b1", 1))
        }
        meta = read_meta(zf, members["meta.npy"], where, MAX_META_BYTES)
        if meta.get("format") != FORMAT:
            raise ModelFileError(f"{where}: format {meta.get('format')!r}, expected {FORMAT!r}")
        if meta.get("layout") != layout_hash():
            raise ModelFileError(
                f"{where}: fitted on feature layout {meta.get('layout')!r}, this code reads "
                f"{layout_hash()!r} ({NUM_FEATURES} features: {[n for n, _ in FEATURE_LAYOUT]})"
            )
    for name, a in arrays.items():
        if a.dtype != np.float64:
            raise ModelFileError(f"{where}: {name} has dtype {a.dtype}, expected float64")
        if not np.all(np.isfinite(a)):
            raise ModelFileError(f"{where}: {name} holds values that are not finite")
    w0, b0, w1, b1 = (arrays[n] for n in WEIGHT_NAMES)
    hidden = w0.shape[1]
    if hidden < 1 or hidden > MAX_HIDDEN:
        raise ModelFileError(f"{where}: w0 has shape {w0.shape}: {hidden} hidden units, expected 1 .. {MAX_HIDDEN}")
    shapes = {"w0": (NUM_FEATURES, hidden), "b0": (hidden,), "w1": (hidden, 1), "b1": (1,)}
    for name, shape in shapes.items():
        if arrays[name].shape != shape:
            raise ModelFileError(
                f"{where}: {name} has shape {arrays[name].shape}, expected {shape} "
                f"(w0 is (features={NUM_FEATURES}, hidden in 1 .. {MAX_HIDDEN}))"
            )
    check_weights(where, [("w0", "b0", w0.T, b0, "ReLU"), ("w1", "b1", w1.T, b1, "Identity")], INPUT_BOUND)
    return BeliefModel(w0, b0, w1, b1, meta)


__all__ = ["DEFAULT_BELIEF", "MAX_HIDDEN", "BeliefModel", "forward_numpy", "layout_hash", "load_belief", "save_belief"]
