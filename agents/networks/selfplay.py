"""The self-play network as a bot (spec ``selfplay[:PATH.npz]``; no path: the shipped one).

``conquian-train selfplay`` trains it from scratch by reinforcement learning
(:mod:`conquian_train.recipes.selfplay`): a ReLU network from the player's own view, never a hidden
card, to the 85 action logits.  It reads the feature set its file names: ``"potential"`` (the
observation and its meld-potential planes, :mod:`conquian_env.potential`) or ``"raw"`` (the
observation alone, :data:`conquian_env.layout.OBSERVATION`).  The bot
plays the most likely legal action (``deterministic=false``: sampled from the masked softmax);
one forward pass of a small MLP in numpy, well under a millisecond a decision, and one pass for
a whole batch in its batched form (:class:`agents.networks.batched.BatchPolicy`).

The file is an ``.npz`` of plain arrays read as untrusted data (:mod:`agents.model_files`): ``meta``
(JSON: the format, the layout stamp of the observation it reads, the hidden widths, how it was
trained, and for a network with a card head ``"head": "cards"`` and the planes it reads), ``w0, b0,
... wK, bK`` (weights ``(out, in)``, float32) and the card head's arrays
(:data:`agents.networks.card_head.HEAD_ARRAYS`, :mod:`agents.networks.card_head`).  The archive's directory, every
array's header and the weights' bounds are checked before the network is used; a file trained on an
earlier observation layout reads its inputs out of today's vector by the pieces its stamp names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from conquian_env.actions import NUM_ACTIONS
from conquian_env.model_layouts import FEATURE_SETS, feature_set_of_model

from ..catalog import bot
from ..model_files import ModelFileError, read_layer_archive, write_npz
from .card_head import HEAD_ARRAYS, CardHead, check_network
from .ppo import INPUT_BOUND, ModelFileAgent, NumpyPolicy

#: the model shipped with the package (``selfplay`` with no path)
DEFAULT_SELFPLAY = Path(__file__).resolve().parents[1] / "data" / "conquian_selfplay.npz"
#: the ``format`` of a self-play model file's meta
FORMAT = "conquian-selfplay-1"
#: the feature sets a self-play network may read (:data:`conquian_env.model_layouts.FEATURE_SETS`): never
#: ``"meld"``, which holds the greedy bot's evaluations and choice
FEATURES = ("raw", "potential")
#: the most layers (hidden ones and the head) a file may hold
MAX_LAYERS = 8
#: the widest hidden layer a file may hold
MAX_WIDTH = 4096
#: the most bytes one array, the meta, and the whole file may hold (uncompressed)
MAX_ARRAY_BYTES = 4 * MAX_WIDTH * MAX_WIDTH
MAX_META_BYTES = 1 << 16
MAX_FILE_BYTES = 1 << 28


def save_selfplay(path: str | Path, layers: list[tuple[np.ndarray, np.ndarray]], meta: dict[str, Any], *,
                  features: str = "raw", head: CardHead | None = None) -> Path:  # fmt: skip
    """Write a self-play model file (atomically): ``layers`` as ``(weight (out, in), bias)``, ReLU
    between them, the last giving the 85 logits, reading ``features`` (one of :data:`FEATURES`), and
    the card ``head`` if the network has one; ``meta`` is stored beside the format and the feature set's stamp."""
    if features not in FEATURES:
        raise ValueError(f"a self-play network reads one of {', '.join(map(repr, FEATURES))}, got {features!r}")
    if layers[0][0].shape[1] != FEATURE_SETS[features].size:
        raise ValueError(f"the first layer reads {layers[0][0].shape[1]} inputs; {features!r} has "
                         f"{FEATURE_SETS[features].size}")  # fmt: skip
    if head is not None and head.features != features:
        raise ValueError(f"the card head reads {head.features!r} vectors, the network {features!r}")
    info = {**meta, "format": FORMAT, "hidden": [int(w.shape[0]) for w, _ in layers[:-1]],
            **FEATURE_SETS[features].stamp(), **(head.meta() if head is not None else {})}  # fmt: skip
    arrays: dict[str, np.ndarray] = {"meta": np.array(json.dumps(info, sort_keys=True))}
    for i, (w, b) in enumerate(layers):
        arrays[f"w{i}"], arrays[f"b{i}"] = np.asarray(w, np.float32), np.asarray(b, np.float32)
    if head is not None:
        arrays.update(head.arrays)
    return write_npz(path, arrays, compressed=False)


def _member_cap(name: str) -> int | None:
    if name == "meta.npy":
        return MAX_META_BYTES
    if name[: -len(".npy")] in HEAD_ARRAYS and name.endswith(".npy"):
        return MAX_ARRAY_BYTES
    if len(name) > 5 and name[0] in "wb" and name[1:-4].isdigit() and name.endswith(".npy"):
        return MAX_ARRAY_BYTES
    return None


def read_selfplay(path: str | Path) -> tuple[NumpyPolicy, dict[str, Any]]:
    """The network of a self-play model file and its meta, read weights-only: a
    :class:`~agents.model_files.ModelFileError` (a ``ValueError``) names the file and the fault."""
    path = Path(path)
    where = f"self-play model {str(path)!r}"

    def check_meta(meta: dict[str, Any]) -> None:
        if meta.get("format") != FORMAT:
            raise ModelFileError(f"{where}: format {meta.get('format')!r}, expected {FORMAT!r}")

    meta, layers, _, found = read_layer_archive(
        path, where, _member_cap, max_layers=MAX_LAYERS, max_total=MAX_FILE_BYTES, max_meta=MAX_META_BYTES,
        max_array=MAX_ARRAY_BYTES, made_by="conquian-train selfplay", what="a model", check_meta=check_meta,
        extras=HEAD_ARRAYS,
    )  # fmt: skip
    count = len(layers)
    stamp = {k: meta.get(k) for k in ("feature_set", "layout_hash", "pieces") if k in meta}
    try:
        inputs = feature_set_of_model(stamp, int(layers[0][0].shape[1]), where=where)
    except ValueError as err:
        raise ModelFileError(str(err)) from err
    if inputs.name not in FEATURES:
        raise ModelFileError(f"{where}: reads the feature set {inputs.name!r}; a self-play network reads "
                             f"{' or '.join(map(repr, FEATURES))}")  # fmt: skip
    for i, (w, b) in enumerate(layers):
        if b.shape != (w.shape[0],) or (i and w.shape[1] != layers[i - 1][0].shape[0]):
            raise ModelFileError(f"{where}: layer {i} has weight {w.shape} and bias {b.shape}, which do not chain")
        if i < count - 1 and w.shape[0] > MAX_WIDTH:
            raise ModelFileError(f"{where}: hidden layer {i} is {w.shape[0]} wide, at most {MAX_WIDTH} allowed")
    if layers[-1][0].shape[0] != NUM_ACTIONS:
        raise ModelFileError(f"{where}: gives {layers[-1][0].shape[0]} logits, a Conquian policy {NUM_ACTIONS}")
    named = [(w, b, "ReLU" if i < count - 1 else "Identity") for i, (w, b) in enumerate(layers)]
    head = _read_head(where, meta, found, inputs.name, layers[-1][0].shape[1] if count > 1 else None)
    check_network(where, [(f"w{i}", f"b{i}", w, b, a) for i, (w, b, a) in enumerate(named)], INPUT_BOUND, head)
    policy = NumpyPolicy(named, inputs.name, inputs.columns(), head=head)
    return policy, meta


def _read_head(where: str, meta: dict[str, Any], found: dict[str, np.ndarray], features: str,
               trunk_width: int | None) -> CardHead | None:  # fmt: skip
    """The card head of a model file (None when its meta names none), checked: its arrays all there, its
    planes in this version's input, its shapes (after a trunk ``trunk_width`` wide; None: no hidden layer).
    Its weights' bounds are :func:`~agents.networks.card_head.check_network`'s, with the trunk's."""
    kind = meta.get("head")
    if kind is None:
        if found:
            raise ModelFileError(f"{where}: holds card head arrays {sorted(found)} but its meta names no head")
        return None
    if kind != "cards":
        raise ModelFileError(f"{where}: head {kind!r}; a self-play network's head is 'cards' or none")
    planes = meta.get("card_planes")
    if not isinstance(planes, list) or not all(isinstance(p, str) for p in planes) or len(planes) > 64:
        raise ModelFileError(f"{where}: card_planes must list the head's planes by name, got {planes!r}")
    if sorted(found) != sorted(HEAD_ARRAYS) or trunk_width is None:
        raise ModelFileError(f"{where}: a card head needs a hidden layer and the arrays {sorted(HEAD_ARRAYS)}, "
                             f"the file holds {sorted(found)}")  # fmt: skip
    try:
        return CardHead(found, features, planes, trunk_width=trunk_width)
    except ValueError as err:
        raise ModelFileError(f"{where}: {err}") from err


@bot(
    "selfplay",
    "the self-play network (conquian-train selfplay, from scratch by RL); no path: the shipped one",
    params={"deterministic": "argmax instead of sampling"},
    positional="[PATH.npz]",
)
class SelfPlayAgent(ModelFileAgent):
    """A self-play model file as a bot (spec ``selfplay[:PATH.npz]``)."""

    name = "selfplay"
    shipped = DEFAULT_SELFPLAY
    shipped_what = "self-play model"

    @staticmethod
    def read(file: Path) -> NumpyPolicy:
        return read_selfplay(file)[0]

    def __init__(self, path: str | None = None, deterministic: bool = True, seed: int | None = None):
        super().__init__(path, deterministic, seed)  # declared here: the registry reads a bot's parameters from it
