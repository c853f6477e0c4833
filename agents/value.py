"""The leaf value of a determinized (full) position: the probability that a player wins (a draw
counting half) from a position where every card but the stock order is known, for the search to
use at the end of a short playout instead of playing the game out (spec ``search``'s ``value``;
docs/bots.md, "The leaf value").

**Inputs.**  :data:`agents.value_kernels.FEATURE_LAYOUT`: both hands, both melds, the dead pile and
the card offered, from the player's side, with greedy's evaluation of each hand, the sizes, the
stock left and whether either player can take the card offered.  **Model.**  One hidden ReLU layer
and a sigmoid; the forward pass runs compiled inside the search's playouts
(:func:`agents.value_kernels.leaf_value`), :func:`forward_numpy` is its twin.  Fitted by
:mod:`conquian_train.value` on the results of games the search plays.

**File.**  A ``.npz`` read as untrusted data by :mod:`agents.model_files` (the archive's directory
and each array's header checked before any data is read, no pickles, weights bounded):
``w0 (F, H)``, ``b0 (H,)``, ``w1 (H, 1)``, ``b1 (1,)`` (float64) and ``meta`` (a JSON string naming
the format and the feature layout's hash).  Anything else is a :class:`~agents.model_files.ModelFileError`
naming what is wrong.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from conquian_env.extras import missing

from .model_files import ModelFileError, check_archive, check_weights, open_archive, read_npy, write_npz

try:
    from .value_kernels import FEATURE_LAYOUT, NUM_FEATURES
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "agents.value (the leaf value)") from None

FORMAT = "conquian-value/1"
WEIGHT_NAMES = ("w0", "b0", "w1", "b1")
#: the most hidden units a file may declare, and the bytes its members may hold
MAX_HIDDEN = 4096
MAX_META_BYTES = 1 << 16


def layout_hash(layout: tuple = FEATURE_LAYOUT) -> str:
    """A short hash of the feature layout (names and sizes in order)."""
    text = json.dumps([[name, int(size)] for name, size in layout])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def forward_numpy(x: np.ndarray, w0: np.ndarray, b0: np.ndarray, w1: np.ndarray, b1: np.ndarray) -> np.ndarray:
    """The value of each row of ``x``: ``sigmoid(relu(x @ w0 + b0) @ w1 + b1)`` (the compiled twin's)."""
    z = np.maximum(x @ w0 + b0, 0.0) @ w1[:, 0] + b1[0]
    return 1.0 / (1.0 + np.exp(-z))


class ValueModel:
    """A loaded leaf value (:func:`load_value`); ``meta``: what the file says about itself."""

    def __init__(self, w0: np.ndarray, b0: np.ndarray, w1: np.ndarray, b1: np.ndarray, meta: dict[str, Any]):
        self.w0, self.b0, self.w1, self.b1 = w0, b0, w1, b1
        self.meta = meta

    @property
    def weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self.w0, self.b0, self.w1, self.b1


def save_value(path: str | Path, weights: tuple[np.ndarray, ...], meta: dict[str, Any]) -> Path:
    """Write a model file atomically (complete or absent after a kill); ``meta`` gains the format
    and the feature layout."""
    path = Path(path)
    w0, b0, w1, b1 = (np.ascontiguousarray(w, dtype=np.float64) for w in weights)
    meta = {**meta, "format": FORMAT, "features": [[n, s] for n, s in FEATURE_LAYOUT], "layout": layout_hash()}
    arrays = {"w0": w0, "b0": b0, "w1": w1, "b1": b1, "meta": np.array(json.dumps(meta))}
    return write_npz(path, arrays, compressed=True)


def _cap(name: str) -> int | None:
    if name == "meta.npy":
        return MAX_META_BYTES
    if name in {f"{n}.npy" for n in WEIGHT_NAMES}:
        return 256 + 8 * NUM_FEATURES * MAX_HIDDEN
    return None


def load_value(path: str | Path) -> ValueModel:
    """Read and check a leaf value file (none is shipped: it measured no gain, docs/bots.md): a
    :class:`~agents.model_files.ModelFileError` (a ``ValueError``) naming what is wrong."""
    path = Path(path)
    where = f"leaf value {str(path)!r}"
    if not path.exists():
        raise ModelFileError(f"{where}: no such file")
    with open_archive(path, where, "value model (.npz)") as zf:
        members = check_archive(zf, where, _cap, required=[f"{n}.npy" for n in (*WEIGHT_NAMES, "meta")],
                                max_members=8, max_total=4 * (256 + 8 * NUM_FEATURES * MAX_HIDDEN))  # fmt: skip
        text = read_npy(zf, members["meta.npy"], where, kinds="U", max_bytes=MAX_META_BYTES, ndims=(0,))
        ndims = {"w0": (2,), "b0": (1,), "w1": (2,), "b1": (1,)}
        arrays = {n: read_npy(zf, members[f"{n}.npy"], where, kinds="f", max_bytes=8 * NUM_FEATURES * MAX_HIDDEN,
                              ndims=ndims[n]) for n in WEIGHT_NAMES}  # fmt: skip
    try:
        meta = json.loads(str(text))
    except json.JSONDecodeError as err:
        raise ModelFileError(f"{where}: meta is not JSON ({err})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else meta
        raise ModelFileError(f"{where}: format {got!r}, expected {FORMAT!r}")
    if meta.get("layout") != layout_hash():
        raise ModelFileError(
            f"{where}: fitted on feature layout {meta.get('layout')!r}, this code reads {layout_hash()!r} "
            f"({NUM_FEATURES} features: {[n for n, _ in FEATURE_LAYOUT]})"
        )
    w0, b0, w1, b1 = (np.ascontiguousarray(arrays[n], dtype=np.float64) for n in WEIGHT_NAMES)
    hidden = w0.shape[1]
    shapes = {"w0": (NUM_FEATURES, hidden), "b0": (hidden,), "w1": (hidden, 1), "b1": (1,)}
    for name, shape in shapes.items():
        if arrays[name].shape != shape or not 1 <= hidden <= MAX_HIDDEN:
            raise ModelFileError(f"{where}: {name} has shape {arrays[name].shape}, expected {shape} "
                                 f"(w0 is (features={NUM_FEATURES}, 1 <= hidden <= {MAX_HIDDEN}))")  # fmt: skip
    # features lie within [0, 1.5] (greedy's evaluation / 11 may pass 1): bound for inputs within ±2
    check_weights(where, [("w0", "b0", w0.T, b0, "ReLU"), ("w1", "b1", w1.T, b1, "Identity")], input_bound=2.0)
    return ValueModel(w0, b0, w1, b1, meta)


__all__ = ["FORMAT", "ValueModel", "forward_numpy", "layout_hash", "load_value", "save_value"]
