"""The belief model of the opponent's hidden hand: for each card the player cannot see, the
probability that the opponent holds it, from the player's view alone.

The search (spec ``search``, :class:`agents.search.BeliefSearchAgent`) deals the unseen cards
from it; :mod:`conquian_train.belief` generates the games it learns from and fits it;
``benchmarks/bench_belief.py`` measures it against uniform deals and the plausibility filter
(docs/bots.md, "The belief model").

**Inputs.**  One row of features per unseen card (:data:`agents.belief_kernels.FEATURE_LAYOUT`),
all read from the view row of :func:`agents.search.view_row`: the cards near it (same rank, one
and two ranks away in its suit) among the opponent's discards, its refusals of cards that did not
fit its meld alone, its meld, the player's meld and hand, the dead pile and the other unseen
cards; whether it fits either meld alone; its partner pairs (both unseen, one discarded by the
opponent, one refused by it, live for the opponent); the opponent's discard or refusal face up
now; and the position (moves, stock turned, hidden-hand size, how many cards are unseen, the
opponent's meld, discards and refusals, and the uniform prior as a logit).  It reads the public
record as the view holds it now (which cards, not in which order), and the latest card only.

**Model.**  One hidden ReLU layer with weights shared across cards gives a logit per card; the
logits are shifted by one constant so that the probabilities add up to the opponent's hidden-hand
size (:func:`agents.belief_kernels.exact_count_logits`).  The forward pass runs compiled
(:func:`agents.belief_kernels.forward`); :func:`forward_numpy` is its twin (the tests hold them
equal to 1e-6) and the fit's.

**File.**  A plain ``.npz`` read with ``allow_pickle=False``: ``w0 (F, H)``, ``b0 (H,)``, ``w1 (H, 1)``,
``b1 (1,)`` (float64, finite) and ``meta`` (a JSON string naming the format, the feature layout and
its hash).  Anything else is refused with an error naming what is wrong: a file read never runs code.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from conquian_env.extras import missing

from .model_files import write_npz

try:
    from .belief_kernels import FEATURE_LAYOUT, NUM_FEATURES
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "agents.belief (the belief model)") from None

#: the shipped belief model (fitted by ``python -m conquian_train.belief fit``)
DEFAULT_BELIEF = Path(__file__).resolve().parent / "data" / "conquian_belief.npz"
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
        :func:`agents.search.view_row`), shifted to the exact count (compiled)."""
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


def load_belief(path: str | Path | None = None) -> BeliefModel:
    """Read and check a belief model file (``None``: the shipped one); ``ValueError`` naming what
    is wrong for anything that is not one (no pickles are read)."""
    path = Path(DEFAULT_BELIEF if path is None else path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except FileNotFoundError:
        raise ValueError(f"belief model {str(path)!r}: no such file") from None
    except (OSError, ValueError, EOFError) as err:  # not a zip, a pickled array, a truncated file
        raise ValueError(f"belief model {str(path)!r}: not a readable .npz without pickles ({err})") from None
    expected = {*WEIGHT_NAMES, "meta"}
    if set(arrays) != expected:
        raise ValueError(
            f"belief model {str(path)!r}: holds arrays {sorted(arrays)}, expected exactly {sorted(expected)}"
        )
    meta_array = arrays.pop("meta")
    if meta_array.shape != () or meta_array.dtype.kind != "U":
        raise ValueError(f"belief model {str(path)!r}: meta must be one JSON string, got {meta_array.dtype} "
                         f"{meta_array.shape}")  # fmt: skip
    try:
        meta = json.loads(str(meta_array))
    except json.JSONDecodeError as err:
        raise ValueError(f"belief model {str(path)!r}: meta is not JSON ({err})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else meta
        raise ValueError(f"belief model {str(path)!r}: format {got!r}, expected {FORMAT!r}")
    if meta.get("layout") != layout_hash():
        raise ValueError(
            f"belief model {str(path)!r}: fitted on feature layout {meta.get('layout')!r}, this code reads "
            f"{layout_hash()!r} ({NUM_FEATURES} features: {[n for n, _ in FEATURE_LAYOUT]})"
        )
    for name in WEIGHT_NAMES:
        a = arrays[name]
        if a.dtype != np.float64:
            raise ValueError(f"belief model {str(path)!r}: {name} has dtype {a.dtype}, expected float64")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"belief model {str(path)!r}: {name} holds values that are not finite")
    w0, b0, w1, b1 = (arrays[n] for n in WEIGHT_NAMES)
    hidden = w0.shape[1] if w0.ndim == 2 else -1
    shapes = {"w0": (NUM_FEATURES, hidden), "b0": (hidden,), "w1": (hidden, 1), "b1": (1,)}
    for name, shape in shapes.items():
        if arrays[name].shape != shape or hidden < 1:
            raise ValueError(
                f"belief model {str(path)!r}: {name} has shape {arrays[name].shape}, expected {shape} "
                f"(w0 is (features={NUM_FEATURES}, hidden >= 1))"
            )
    return BeliefModel(w0, b0, w1, b1, meta)


__all__ = ["DEFAULT_BELIEF", "BeliefModel", "forward_numpy", "layout_hash", "load_belief", "save_belief"]
