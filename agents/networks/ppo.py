"""Bots that play a trained policy: MaskablePPO models (sb3-contrib ``.zip`` files).

A model must have been trained on Conquian with ``Discrete(85)`` actions and one of two
observations, told apart by their size:

* the raw observation vector (``Box(0, 1, (OBS_SIZE,), int8)``, :data:`conquian_env.layout.OBSERVATION`),
  e.g. through :class:`conquian_env.wrappers.SingleAgentEnv`;
* the ``"meld"`` features (``(FEATURE_SIZE,)`` float32, :data:`conquian_env.layout.MELD_FEATURES`,
  :mod:`agents.scorer.features`), as ``train.py``
  trains by default.

A model file written since models carry their input (:func:`stamp_model`) stores the feature
set, the hash of its layout and its pieces (:mod:`conquian_env.layout`) in its metadata; a
file written before has no stamp and is read as before, its layout told by its input size.
Loading matches the model's pieces by name and size against this version's layout
(:func:`conquian_env.model_layouts.feature_set_of_model`): a piece added since (a new rule variant's)
is left out of the policy's input (:attr:`NumpyPolicy.columns`), so the model plays as it was
trained; a piece it knows that is gone or resized refuses the file, naming the piece.

The bot plays with the legal-action mask, so it never chooses an illegal action.  Spec:
``ppo[:PATH.zip][,deterministic=true|false]``; with no path it plays the model shipped
in the package (:data:`DEFAULT_MODEL`, made by the recipe in the README).

Inference does not go through torch: the policy's layers are copied into numpy arrays
once (:class:`NumpyPolicy`), which is several times faster than ``model.predict`` for
one observation and lets worker processes play snapshots of a policy without torch.

Loading runs no code from the file (:func:`read_model`): a MaskablePPO ``.zip`` holds
pickles (its ``data`` JSON has cloudpickled ``":serialized:"`` entries, which SB3's
``MaskablePPO.load`` unpickles and so runs whatever they hold).  The bot reads only the
policy's tensors, with ``torch.load(weights_only=True)``, and the plain JSON of the
metadata; the layer sizes come from the tensors and are checked against the observation
the bot gives the policy.  Use ``MaskablePPO.load`` only on a file you trust.

Training's files (the learner snapshots, a checkpoint's restore, the export of a model) are
:mod:`conquian_train.policy_files`'; an import of them from here names that module.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from conquian_env.actions import NUM_ACTIONS
from conquian_env.extras import missing
from conquian_env.layout import Layout
from conquian_env.model_layouts import feature_set, feature_set_for_size, feature_set_of_model
from conquian_env.seeding import bot_game_rng

from ..base import Agent, PlayerView
from ..catalog import bot
from ..model_files import (
    ModelFileError,
    best_legal,
    check_archive,
    check_weights,
    open_archive,
    read_member,
    torch_archive_check,
)
from ..params import Flag, bounded

#: the model shipped with the package (``ppo`` with no path)
DEFAULT_MODEL = Path(__file__).resolve().parents[1] / "data" / "conquian_ppo.zip"

_ACTIVATIONS = {
    "Tanh": np.tanh,
    "ReLU": lambda x: np.maximum(x, 0.0),
    "Identity": lambda x: x,
}
#: the activations a policy layer may have (:class:`NumpyPolicy`)
ACTIVATIONS = tuple(sorted(_ACTIVATIONS))


class NumpyPolicy:
    """The actor of an SB3 MLP actor-critic policy as numpy arrays (picklable, torch-free).

    ``layers`` is a list of ``(weight, bias, activation name)``; the last layer gives
    the 85 action logits.  ``features`` names the observation the policy reads
    (``"raw"``, ``"meld"`` or ``"potential"``: :data:`conquian_env.model_layouts.FEATURE_SETS`).
    ``columns``: None when the policy reads this version's vector as it is; else the slot of this
    version's vector of each of its inputs (a model trained before a piece was added:
    :meth:`conquian_env.model_layouts.FeatureSet.columns`), picked out before the first layer.
    ``head``: a :class:`~agents.networks.card_head.CardHead` adding each hand card's scores to the
    logits, from the vector and the last hidden layer (a self-play network's ``head="cards"``).
    """

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray, str]], features: str, columns: Any = None,
                 head: Any = None):  # fmt: skip
        feature_set(features)  # a ValueError naming the feature sets there are
        self.layers = [(np.asarray(w, np.float32), np.asarray(b, np.float32), act) for w, b, act in layers]
        self.features = features
        self.columns = None if columns is None else np.asarray(columns, np.int64)
        if self.columns is not None and (self.columns.ndim != 1 or len(self.columns) != self.layers[0][0].shape[1]):
            raise ValueError(f"columns must list the {self.layers[0][0].shape[1]} inputs' slots, got "
                             f"{self.columns.shape}")  # fmt: skip
        for _, _, act in self.layers:
            if act not in _ACTIVATIONS:
                raise ValueError(f"unsupported activation {act!r}; supported: {sorted(_ACTIVATIONS)}")
        for k, (w, b, _) in enumerate(self.layers):
            if w.ndim != 2 or b.shape != (w.shape[0],):
                raise ValueError(f"layer {k}: weight {w.shape} and bias {b.shape} are not (out, in) and (out,)")
            if k and w.shape[1] != self.layers[k - 1][0].shape[0]:
                raise ValueError(
                    f"layer {k} reads {w.shape[1]} inputs; the layer before gives {self.layers[k - 1][0].shape[0]}"
                )
        if self.layers[-1][0].shape[0] != NUM_ACTIONS:
            raise ValueError(f"the last layer must give {NUM_ACTIONS} action logits, got {self.layers[-1][0].shape[0]}")
        self.head = head
        if head is not None and (len(self.layers) < 2 or head.features != features
                                 or head.arrays["card_ctx_w"].shape[1] != self.layers[-1][0].shape[1]):  # fmt: skip
            raise ValueError(f"a card head reads {head.features!r} vectors and a trunk's last hidden layer "
                             f"({head.arrays['card_ctx_w'].shape[1]} wide); this policy reads {features!r} and "
                             f"has {len(self.layers) - 1} hidden layers")  # fmt: skip

    @classmethod
    def from_sb3(cls, policy: Any) -> NumpyPolicy:
        """Copy the actor of a (Maskable)ActorCriticPolicy with an MLP extractor."""
        import torch

        layers: list[tuple[np.ndarray, np.ndarray, str]] = []
        modules = list(policy.mlp_extractor.policy_net)
        i = 0
        with torch.no_grad():
            while i < len(modules):
                lin = modules[i]
                if not isinstance(lin, torch.nn.Linear):
                    raise ValueError(f"unsupported policy network layer {lin!r}: only Linear + activation MLPs")
                act = "Identity"
                if i + 1 < len(modules) and not isinstance(modules[i + 1], torch.nn.Linear):
                    act = type(modules[i + 1]).__name__
                    i += 1
                layers.append((lin.weight.cpu().numpy().copy(), lin.bias.cpu().numpy().copy(), act))
                i += 1
            head = policy.action_net
            layers.append((head.weight.cpu().numpy().copy(), head.bias.cpu().numpy().copy(), "Identity"))
        size = policy.observation_space.shape[0]
        return cls(layers, features=features_for_size(size))

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """The action logits of ``obs`` (this version's vector, ``(..., size)``)."""
        x = np.asarray(obs, dtype=np.float32)
        if self.head is not None:
            full = x.reshape(-1, x.shape[-1])
        if self.columns is not None:
            x = x[..., self.columns]
        for w, b, act in self.layers[:-1]:
            x = _ACTIVATIONS[act](x @ w.T + b)
        w, b, act = self.layers[-1]
        out = _ACTIVATIONS[act](x @ w.T + b)
        if self.head is not None:
            shape = out.shape
            out = self.head.apply(full, x.reshape(-1, x.shape[-1]), out.reshape(-1, NUM_ACTIONS)).reshape(shape)
        return out

    def act(
        self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None, who: str = "policy"
    ) -> int:
        """Best legal action, or one sampled from the masked softmax when ``rng`` is given.

        Never an illegal action: when a legal logit is NaN or infinite (a diverged network) the
        move is :func:`agents.model_files.best_legal`'s, sampled or not, with a
        :class:`~agents.model_files.NonFiniteScoresWarning` naming ``who`` once."""
        mask = np.asarray(mask, dtype=bool)
        raw = self.logits(obs)
        if rng is None or not np.isfinite(raw[mask]).all():
            return best_legal(raw, mask, who)
        logits = np.where(mask, raw, -np.inf)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        return int(rng.choice(NUM_ACTIONS, p=p))


def features_for_size(size: int) -> str:
    """Which observation a model of input size ``size`` reads (how a model file without a
    stamp is read: :func:`conquian_env.model_layouts.feature_set_for_size`)."""
    return feature_set_for_size(size).name


#: the key of a model file's metadata (its ``data`` JSON) that holds the feature set the
#: policy reads and that feature set's layout hash (:meth:`conquian_env.model_layouts.FeatureSet.stamp`)
STAMP_KEY = "conquian_input"


def stamp_model(model: Any, features: str) -> None:
    """Mark the MaskablePPO ``model`` as reading ``features`` (``"raw"`` or ``"meld"``): every
    ``model.save`` from now on stores the feature set, its layout hash and its pieces in the file's
    metadata (:data:`STAMP_KEY`, plain JSON), and :func:`read_model` checks them."""
    setattr(model, STAMP_KEY, feature_set(features).stamp())


def batch_form(kind: str, load: Any, params: dict[str, Any], seed: int | None) -> Any:
    """The batched form of a policy bot of ``kind`` (:class:`agents.networks.batched.BatchPolicy`): its
    spec's parameters checked (``deterministic`` and ``seed`` only), then the policy ``load()``-ed."""
    from .batched import BatchPolicy

    unknown = set(params) - {"deterministic", "seed"}
    if unknown:
        raise ValueError(f"{kind} takes the parameters deterministic and seed, got {sorted(unknown)}")
    return BatchPolicy(load(), params.get("deterministic", True), params.get("seed", seed), fixed_seed="seed" in params)


class PotentialEncoder:
    """The ``"potential"`` vector of a view (:func:`conquian_env.potential.encode_potential`)."""

    def reset(self) -> None:
        pass

    def encode(self, view: PlayerView) -> np.ndarray:
        from conquian_env.potential import encode_potential

        return encode_potential(view)


class PolicyAgent(Agent):
    """Plays a :class:`NumpyPolicy` with the mask: argmax, or sampled when not deterministic."""

    name = "policy"

    def __init__(self, policy: NumpyPolicy, deterministic: bool = True, seed: int | None = None):
        self.policy = policy
        self.deterministic = deterministic
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self._encoder: Any = None
        if policy.features == "meld":
            from ..scorer.features import FeatureEncoder

            self._encoder = FeatureEncoder()
        elif policy.features == "potential":
            self._encoder = PotentialEncoder()

    def reset(self, player: int, seed: int | None = None) -> None:
        if self._encoder is not None:
            self._encoder.reset()
        if seed is not None:
            self.rng = bot_game_rng(seed, self.seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        obs = observation if self._encoder is None else self._encoder.encode(view)
        return self.policy.act(obs, action_mask, None if self.deterministic else self.rng, who=self.name)


#: the activation classes SB3 names in a model's ``policy_kwargs`` (its readable text), by our name
_SB3_ACTIVATIONS = {
    "<class 'torch.nn.modules.activation.Tanh'>": "Tanh",
    "<class 'torch.nn.modules.activation.ReLU'>": "ReLU",
}
#: ``policy_kwargs`` that do not change what an MLP actor computes from a flat observation
_INERT_POLICY_KWARGS = {
    "net_arch",
    "activation_fn",
    "ortho_init",
    "share_features_extractor",
    "normalize_images",
    "optimizer_class",
    "optimizer_kwargs",
}
_FLATTEN = "<class 'stable_baselines3.common.torch_layers.FlattenExtractor'>"
_HIDDEN = re.compile(r"mlp_extractor\.(policy|value)_net\.(\d{1,3})\.(weight|bias)")
_HEADS = {"action_net.weight", "action_net.bias", "value_net.weight", "value_net.bias"}


#: the members a MaskablePPO ``.zip`` may hold and the most bytes each may hold uncompressed
#: (``data``: the JSON metadata; the ``.pth`` members: torch's archives; the last two: text)
MEMBER_CAPS = {
    "data": 1 << 22,
    "policy.pth": 1 << 27,
    "policy.optimizer.pth": 1 << 28,
    "pytorch_variables.pth": 1 << 20,
    "_stable_baselines3_version": 1 << 10,
    "system_info.txt": 1 << 16,
}
#: the most bytes the members of a model ``.zip`` may hold together (uncompressed)
MAX_MODEL_BYTES = 1 << 29
#: the most values one tensor of a model may hold (a 4096 x 4096 layer)
MAX_TENSOR_ELEMENTS = 1 << 24
#: every input of a policy lies within ±this (raw observation: 0/1; "meld" features: [-1, 1])
INPUT_BOUND = 1.0


@dataclass
class ModelFile:
    """The parts of a MaskablePPO ``.zip`` read without unpickling anything.

    ``policy_state``: the policy's tensors (``policy.pth``, through ``torch.load(weights_only=True)``);
    ``metadata``: the ``data`` JSON as plain JSON (the pickled ``":serialized:"`` entries are
    never decoded: only the readable text SB3 writes next to them is used); ``activation``:
    the hidden layers' activation; ``features``: the observation the policy reads;
    ``layers``: the actor's checked ``(weight, bias, activation)``; ``columns``: where its
    inputs lie in this version's vector (None: it reads it as it is; :class:`NumpyPolicy`);
    ``layout``: the layout it was trained on (:class:`conquian_env.layout.Layout`).
    """

    path: Path
    policy_state: dict[str, Any]
    metadata: dict[str, Any]
    activation: str
    features: str
    layers: list[tuple[np.ndarray, np.ndarray, str]]
    columns: tuple[int, ...] | None = None
    layout: Layout | None = None

    @property
    def net_arch(self) -> tuple[int, ...]:
        """The actor's hidden layer sizes."""
        return tuple(w.shape[0] for w, _, _ in self.layers[:-1])

    def policy(self) -> NumpyPolicy:
        """The actor as a :class:`NumpyPolicy`."""
        return NumpyPolicy(self.layers, features=self.features, columns=self.columns)

    def optimizer_state(self) -> dict[str, Any] | None:
        """The Adam state (``policy.optimizer.pth``, weights only, every tensor checked: dense floats or
        integers, finite, within the size caps), or None when the file has none."""
        where = f"cannot load {str(self.path)!r}"
        with _open_zip(self.path) as zf:
            members = _members(zf, where)
            if "policy.optimizer.pth" not in members:
                return None
            state = _torch_load(zf, members["policy.optimizer.pth"], where)
        if not isinstance(state, dict) or not isinstance(state.get("state"), dict):
            raise ModelFileError(f"{where}: policy.optimizer.pth is not an optimizer state dict")
        total = 0
        for k, entry in state["state"].items():
            if not isinstance(entry, dict):
                raise ModelFileError(f"{where}: policy.optimizer.pth state {k!r} is not a table of tensors")
            for name, value in entry.items():
                total += _check_tensor(where, f"optimizer state {k}.{name}", value, floats_only=False, bound=None)
        if total > MAX_MODEL_BYTES // 4:
            raise ModelFileError(f"{where}: policy.optimizer.pth holds {total} values, more than the caps allow")
        return state


def _open_zip(file: Path) -> zipfile.ZipFile:
    return open_archive(file, f"cannot load {str(file)!r}", "model .zip")


def _members(zf: zipfile.ZipFile, where: str) -> dict[str, zipfile.ZipInfo]:
    """The members of a model ``.zip``, from its directory: only :data:`MEMBER_CAPS`' names, each within its cap."""
    return check_archive(zf, where, MEMBER_CAPS.get, max_members=64, max_total=MAX_MODEL_BYTES)


def _torch_load(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> Any:
    try:
        import torch
    except ImportError as err:  # torch alone: the 'train' extra would add SB3, which pulls a CUDA torch
        raise missing(err, "the ppo bot (to read a model file)") from None
    data = read_member(zf, info, where)
    torch_archive_check(data, where, info.filename, MEMBER_CAPS[info.filename])
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # weights_only refuses anything but tensors and plain containers
        raise ModelFileError(f"{where}: {info.filename} is not a weights-only state dict ({err})") from err


def _check_tensor(where: str, name: str, value: Any, *, floats_only: bool = True, bound: float | None) -> int:
    """``value`` must be a dense tensor of at most :data:`MAX_TENSOR_ELEMENTS` values (checked before
    any of them is read), floats (``floats_only``) or numbers, all finite and (``bound``) at most
    that in absolute value; returns its number of values."""
    import torch

    floats = (torch.float16, torch.float32, torch.float64)
    if not isinstance(value, torch.Tensor) or value.layout != torch.strided:
        raise ModelFileError(
            f"{where}: {name} is not a float tensor" if floats_only else f"{where}: {name} is not a tensor"
        )
    if floats_only and value.dtype not in floats:
        raise ModelFileError(f"{where}: {name} is not a float tensor (it is {value.dtype})")
    if not floats_only and value.dtype not in (*floats, torch.int32, torch.int64):
        raise ModelFileError(f"{where}: {name} is a {value.dtype} tensor, not floats or integers")
    if value.numel() > MAX_TENSOR_ELEMENTS or value.ndim > 2:
        raise ModelFileError(
            f"{where}: {name} has shape {tuple(value.shape)}; a tensor has at most 2 dims and "
            f"{MAX_TENSOR_ELEMENTS} values"
        )
    if value.dtype in floats:
        if not bool(torch.isfinite(value).all()):
            raise ModelFileError(f"{where}: {name} holds NaN or infinite values")
        top = float(value.abs().max()) if value.numel() else 0.0
        if bound is not None and top > bound:
            raise ModelFileError(
                f"{where}: {name} holds a value of magnitude {top:.3g}; a model's weights are at most {bound:g} "
                "in absolute value"
            )
    return int(value.numel())


def _readable(entry: Any) -> dict[str, Any] | None:
    """A ``data`` entry as the plain JSON SB3 writes (for a pickled one: the text beside the pickle)."""
    return entry if isinstance(entry, dict) else None


def _activation(file: Path, metadata: dict[str, Any]) -> str:
    """The hidden layers' activation named by ``policy_kwargs`` (SB3's default for MLPs: Tanh)."""
    kwargs = _readable(metadata.get("policy_kwargs", {}))
    if kwargs is None:
        raise ModelFileError(f"model {str(file)!r}: policy_kwargs in its metadata is not a table")
    unknown = sorted(
        k
        for k, v in kwargs.items()
        if not k.startswith(":")
        and k not in _INERT_POLICY_KWARGS
        and not (k == "features_extractor_class" and v == _FLATTEN)
    )
    if unknown:
        raise ModelFileError(
            f"model {str(file)!r}: policy_kwargs {unknown} may change what the policy computes; "
            f"this loader reads MLP policies with the keys {sorted(_INERT_POLICY_KWARGS)} only"
        )
    if "activation_fn" not in kwargs:
        return "Tanh"
    name = _SB3_ACTIVATIONS.get(str(kwargs["activation_fn"]))
    if name is None:
        raise ModelFileError(
            f"model {str(file)!r}: activation_fn {kwargs['activation_fn']!r} is not supported; "
            f"supported: {sorted(_SB3_ACTIVATIONS)}"
        )
    return name


def _check_spaces(file: Path, metadata: dict[str, Any], inputs: int) -> None:
    """The metadata's observation and action spaces against the tensors and the game."""
    obs, act = _readable(metadata.get("observation_space")), _readable(metadata.get("action_space"))
    if obs is None or act is None:
        raise ModelFileError(f"model {str(file)!r}: its metadata has no observation_space / action_space")
    if "Box" not in str(obs.get(":type:")) or obs.get("_shape") != [inputs]:
        raise ModelFileError(
            f"model {str(file)!r}: its metadata says the observation is {obs.get(':type:')} of shape "
            f"{obs.get('_shape')}, but its first layer reads {inputs} inputs (a flat Box of that size)"
        )
    if (
        "Discrete" not in str(act.get(":type:"))
        or str(act.get("n")) != str(NUM_ACTIONS)
        or str(act.get("start", 0)) != "0"
    ):
        raise ModelFileError(
            f"model {str(file)!r}: its metadata says the actions are {act.get(':type:')} n={act.get('n')}; "
            f"a Conquian model has Discrete({NUM_ACTIONS}) actions"
        )


def _chain(file: Path, state: dict[str, Any], hidden: dict[tuple[str, int], dict[str, Any]], net: str, head: str,
           activation: str) -> list[tuple[str, np.ndarray, np.ndarray, str]]:  # fmt: skip
    """One network of the policy (``net`` "policy": the actor, "value": the critic) as checked
    ``(name, weight, bias, activation)``: each layer reads what the one before gives."""
    pairs = [(f"mlp_extractor.{net}_net.{i}", hidden[(net, i)]) for _, i in sorted(k for k in hidden if k[0] == net)]
    pairs.append((head, {"weight": state[f"{head}.weight"], "bias": state[f"{head}.bias"]}))
    layers: list[tuple[str, np.ndarray, np.ndarray, str]] = []
    for k, (name, parts) in enumerate(pairs):
        w, b = (parts[p].detach().cpu().numpy() for p in ("weight", "bias"))
        if w.ndim != 2 or b.shape != (w.shape[0],):
            raise ModelFileError(
                f"model {str(file)!r}: {name} has weight {w.shape} and bias {b.shape}, not (out, in) and (out,)"
            )
        if layers and w.shape[1] != layers[-1][1].shape[0]:
            raise ModelFileError(
                f"model {str(file)!r}: {name} reads {w.shape[1]} inputs "
                f"but the layer before gives {layers[-1][1].shape[0]}"
            )
        layers.append((name, w, b, "Identity" if k == len(pairs) - 1 else activation))
    return layers


def _actor_layers(file: Path, state: dict[str, Any], activation: str) -> list[tuple[np.ndarray, np.ndarray, str]]:
    """The actor's (weight, bias, activation) from the policy tensors.  Every tensor of the file is
    checked (dense floats, at most :data:`MAX_TENSOR_ELEMENTS` values, finite, at most
    :data:`~agents.model_files.MAX_ABS_WEIGHT`), the actor's and the critic's layers for shape, and
    both networks' values bounded for every observation (:func:`~agents.model_files.check_weights`)."""
    from ..model_files import MAX_ABS_WEIGHT

    where = f"model {str(file)!r}"
    hidden: dict[tuple[str, int], dict[str, Any]] = {}
    unexpected = []
    for key, value in state.items():
        m = _HIDDEN.fullmatch(str(key))
        if m:
            hidden.setdefault((m.group(1), int(m.group(2))), {})[m.group(3)] = value
        elif key not in _HEADS:
            unexpected.append(key)
    if unexpected:
        raise ModelFileError(
            f"{where}: unexpected tensors {sorted(map(str, unexpected))[:5]}; "
            "only an MLP policy (flattened observation, Linear layers) can be loaded"
        )
    missing = sorted(_HEADS - set(state))
    for (net, i), parts in hidden.items():
        missing += [f"mlp_extractor.{net}_net.{i}.{p}" for p in ("weight", "bias") if p not in parts]
    if missing:
        raise ModelFileError(f"{where}: missing tensors {missing} in policy.pth")
    total = sum(_check_tensor(where, str(key), value, bound=MAX_ABS_WEIGHT) for key, value in state.items())
    if total > MEMBER_CAPS["policy.pth"] // 2:
        raise ModelFileError(f"{where}: policy.pth holds {total} values, more than the caps allow")
    actor = _chain(file, state, hidden, "policy", "action_net", activation)
    check_weights(where, [(f"{n}.weight", f"{n}.bias", w, b, a) for n, w, b, a in actor], INPUT_BOUND)
    return [(w, b, act) for _, w, b, act in actor]


def _check_critic(file: Path, state: dict[str, Any], activation: str, inputs: int) -> None:
    """The critic's layers (checked as the actor's: shapes, bounded values) read the actor's ``inputs``."""
    where = f"model {str(file)!r}"
    hidden: dict[tuple[str, int], dict[str, Any]] = {}
    for key, value in state.items():
        m = _HIDDEN.fullmatch(str(key))
        if m:
            hidden.setdefault((m.group(1), int(m.group(2))), {})[m.group(3)] = value
    critic = _chain(file, state, hidden, "value", "value_net", activation)
    if critic[0][1].shape[1] != inputs:
        raise ModelFileError(f"{where}: the actor reads {inputs} inputs, the critic {critic[0][1].shape[1]}")
    if critic[-1][1].shape[0] != 1:
        raise ModelFileError(f"{where}: value_net gives {critic[-1][1].shape[0]} values, a critic gives 1")
    check_weights(where, [(f"{n}.weight", f"{n}.bias", w, b, a) for n, w, b, a in critic], INPUT_BOUND)


def read_model(path: str | Path) -> ModelFile:
    """Read a MaskablePPO ``.zip`` without running any code from it (clear errors for bad files).

    Only the policy's tensors (``torch.load(weights_only=True)``) and the plain JSON of
    its metadata are read; the layer sizes come from the tensors and are checked against
    the observation the bot will give (:data:`~conquian_env.observation.OBS_SIZE` raw, or
    the ``"meld"`` features) and the metadata.  SB3's own ``MaskablePPO.load`` unpickles
    the metadata, which can run any code: use it only on files you trust.

    The archive is read as untrusted data (:mod:`agents.model_files`): its directory first
    (only SB3's member names, each within :data:`MEMBER_CAPS`, all within
    :data:`MAX_MODEL_BYTES`), then each member read up to its declared size; every tensor of
    the policy, the critic's too, is checked (:func:`_actor_layers`).  Errors are
    :class:`~agents.model_files.ModelFileError` (a ``ValueError``) naming the file and the fault.
    """
    file = Path(path)
    if not file.is_file() and file.suffix != ".zip" and file.with_suffix(".zip").is_file():
        file = file.with_suffix(".zip")
    if not file.is_file():
        raise ModelFileError(f"no model file at {str(path)!r}: give the .zip written by MaskablePPO.save()")
    where = f"cannot load {str(file)!r}"
    with _open_zip(file) as zf:
        members = _members(zf, where)
        missing = sorted({"data", "policy.pth"} - set(members))
        if missing:
            raise ModelFileError(f"{where}: the zip lacks {missing} (not a MaskablePPO model)")
        try:
            metadata = json.loads(read_member(zf, members["data"], where))
        except (ValueError, UnicodeDecodeError, RecursionError) as err:
            raise ModelFileError(f"{where}: its metadata (data) is not JSON ({err})") from err
        if not isinstance(metadata, dict):
            raise ModelFileError(f"{where}: its metadata (data) is not a JSON object")
        state = _torch_load(zf, members["policy.pth"], where)
    if not isinstance(state, dict):
        raise ModelFileError(f"{where}: policy.pth holds {type(state).__name__}, not a state dict")
    activation = _activation(file, metadata)
    layers = _actor_layers(file, state, activation)
    inputs = layers[0][0].shape[1]
    if layers[-1][0].shape[0] != NUM_ACTIONS:
        raise ModelFileError(
            f"model {str(file)!r} gives {layers[-1][0].shape[0]} action logits; "
            f"a Conquian model needs {NUM_ACTIONS} actions"
        )
    _check_spaces(file, metadata, inputs)
    try:
        inputs_of = feature_set_of_model(metadata.get(STAMP_KEY), inputs, where=f"model {str(file)!r}")
    except ValueError as err:
        raise ModelFileError(err if str(err).startswith("model ") else f"model {str(file)!r}: {err}") from err
    _check_critic(file, state, activation, inputs)
    return ModelFile(
        file, dict(state), metadata, activation, inputs_of.name, layers, inputs_of.columns(), inputs_of.layout
    )


def load_policy(path: str | Path) -> NumpyPolicy:
    """The actor of a MaskablePPO ``.zip`` as a :class:`NumpyPolicy`, read weights-only (:func:`read_model`)."""
    return read_model(path).policy()


class ModelFileAgent(PolicyAgent):
    """A policy read from a model file as a bot (spec ``KIND[:PATH]``): the file ``path``, or with
    none the one shipped in the package (:attr:`shipped`), read by :meth:`read`; named ``KIND``, or
    ``KIND:FILE`` for a file of the user's.  Its batched form reads the same file once."""

    #: the model file shipped in the package, and what it is called in an error
    shipped: Path
    shipped_what = "model"

    @staticmethod
    def read(file: Path) -> NumpyPolicy:
        raise NotImplementedError

    @classmethod
    def model_file(cls, path: str | None) -> Path:
        file = cls.shipped if path is None else Path(path)
        if path is None and not file.is_file():
            raise ValueError(f"the shipped {cls.shipped_what} {str(file)!r} is missing from this installation")
        return file

    @bounded(deterministic=Flag())
    def __init__(self, path: str | None = None, deterministic: bool = True, seed: int | None = None):
        kind = type(self).name
        file = self.model_file(path)
        super().__init__(self.read(file), deterministic=deterministic, seed=seed)
        self.name = kind if path is None else f"{kind}:{file.name}"

    @classmethod
    def batched(cls, path: str | None, params: dict[str, Any], seed: int | None) -> Any:
        return batch_form(cls.name, lambda: cls.read(cls.model_file(path)), params, seed)


@bot(
    "ppo",
    "a MaskablePPO model (sb3-contrib .zip from train.py); no path: the shipped model",
    params={"deterministic": "argmax instead of sampling"},
    positional="[PATH.zip]",
)
class PPOAgent(ModelFileAgent):
    """A MaskablePPO model file as a bot (spec ``ppo[:PATH.zip]``)."""

    name = "ppo"
    shipped = DEFAULT_MODEL
    read = staticmethod(load_policy)

    def __init__(self, path: str | None = None, deterministic: bool = True, seed: int | None = None):
        super().__init__(path, deterministic, seed)  # declared here: the registry reads a bot's parameters from it
