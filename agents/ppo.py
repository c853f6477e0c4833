"""Bots that play a trained policy: MaskablePPO models (sb3-contrib ``.zip`` files).

A model must have been trained on Conquian with ``Discrete(85)`` actions and one of two
observations, told apart by their size:

* the raw observation vector (``Box(0, 1, (456,), int8)``, :mod:`conquian_env.observation`),
  e.g. through :class:`conquian_env.wrappers.SingleAgentEnv`;
* the ``"meld"`` features (``(865,)`` float32, :mod:`agents.features`), as ``train.py``
  trains by default.

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

Training's files sit beside the policy: :func:`save_snapshots` / :func:`load_snapshots`
(the learner snapshots of the opponent pool, plain ``.npz``), :func:`restore_checkpoint`
(``train.py --resume``: weights, Adam state and counters into a fresh model, weights-only)
and :func:`export_model` (``train.py --export``: the policy without its optimizer state).
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
from conquian_env.observation import OBS_SIZE
from conquian_env.seeding import bot_game_rng

from .base import Agent, PlayerView
from .params import Flag, bounded

#: the model shipped with the package (``ppo`` with no path)
DEFAULT_MODEL = Path(__file__).resolve().parent / "data" / "conquian_ppo.zip"

_ACTIVATIONS = {
    "Tanh": np.tanh,
    "ReLU": lambda x: np.maximum(x, 0.0),
    "Identity": lambda x: x,
}


class NumpyPolicy:
    """The actor of an SB3 MLP actor-critic policy as numpy arrays (picklable, torch-free).

    ``layers`` is a list of ``(weight, bias, activation name)``; the last layer gives
    the 85 action logits.  ``features`` names the observation the policy reads
    (``"raw"`` or ``"meld"``).
    """

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray, str]], features: str):
        if features not in ("raw", "meld"):
            raise ValueError(f"features must be 'raw' or 'meld', got {features!r}")
        self.layers = [(np.asarray(w, np.float32), np.asarray(b, np.float32), act) for w, b, act in layers]
        self.features = features
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
        x = np.asarray(obs, dtype=np.float32)
        for w, b, act in self.layers:
            x = _ACTIVATIONS[act](x @ w.T + b)
        return x

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None) -> int:
        """Best legal action, or one sampled from the masked softmax when ``rng`` is given."""
        logits = np.where(np.asarray(mask, dtype=bool), self.logits(obs), -np.inf)
        if rng is None:
            return int(np.argmax(logits))
        p = np.exp(logits - logits.max())
        p /= p.sum()
        return int(rng.choice(NUM_ACTIONS, p=p))


def features_for_size(size: int) -> str:
    """Which observation a model of input size ``size`` reads."""
    from .features import FEATURE_SIZE

    if size == OBS_SIZE:
        return "raw"
    if size == FEATURE_SIZE:
        return "meld"
    raise ValueError(
        f"a Conquian policy reads {OBS_SIZE} (raw observation) or {FEATURE_SIZE} ('meld' features) inputs, got {size}"
    )


class PolicyAgent(Agent):
    """Plays a :class:`NumpyPolicy` with the mask: argmax, or sampled when not deterministic."""

    name = "policy"

    def __init__(self, policy: NumpyPolicy, deterministic: bool = True, seed: int | None = None):
        self.policy = policy
        self.deterministic = deterministic
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self._encoder = None
        if policy.features == "meld":
            from .features import FeatureEncoder

            self._encoder = FeatureEncoder()

    def reset(self, player: int, seed: int | None = None) -> None:
        if self._encoder is not None:
            self._encoder.reset()
        if seed is not None:
            self.rng = bot_game_rng(seed, self.seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        obs = observation if self._encoder is None else self._encoder.encode(view)
        return self.policy.act(obs, action_mask, None if self.deterministic else self.rng)


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
_HIDDEN = re.compile(r"mlp_extractor\.(policy|value)_net\.(\d+)\.(weight|bias)")
_HEADS = {"action_net.weight", "action_net.bias", "value_net.weight", "value_net.bias"}


@dataclass
class ModelFile:
    """The parts of a MaskablePPO ``.zip`` read without unpickling anything.

    ``policy_state``: the policy's tensors (``policy.pth``, through ``torch.load(weights_only=True)``);
    ``metadata``: the ``data`` JSON as plain JSON (the pickled ``":serialized:"`` entries are
    never decoded: only the readable text SB3 writes next to them is used); ``activation``:
    the hidden layers' activation; ``features``: the observation the policy reads;
    ``layers``: the actor's checked ``(weight, bias, activation)``.
    """

    path: Path
    policy_state: dict[str, Any]
    metadata: dict[str, Any]
    activation: str
    features: str
    layers: list[tuple[np.ndarray, np.ndarray, str]]

    @property
    def net_arch(self) -> tuple[int, ...]:
        """The actor's hidden layer sizes."""
        return tuple(w.shape[0] for w, _, _ in self.layers[:-1])

    def policy(self) -> NumpyPolicy:
        """The actor as a :class:`NumpyPolicy`."""
        return NumpyPolicy(self.layers, features=self.features)

    def optimizer_state(self) -> dict[str, Any] | None:
        """The Adam state (``policy.optimizer.pth``, weights only), or None when the file has none."""
        with _open_zip(self.path) as zf:
            if "policy.optimizer.pth" not in zf.namelist():
                return None
            return _torch_load(zf, "policy.optimizer.pth", self.path)


def _open_zip(file: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError) as err:
        raise ValueError(f"cannot load {str(file)!r}: not a model .zip ({err})") from err


def _torch_load(zf: zipfile.ZipFile, name: str, file: Path) -> Any:
    try:
        import torch
    except ImportError as err:  # torch is part of the 'train' extra
        raise ValueError("the ppo bot needs torch to read a model file: pip install 'conquian-env[train]'") from err
    try:
        return torch.load(io.BytesIO(zf.read(name)), map_location="cpu", weights_only=True)
    except Exception as err:  # weights_only refuses anything but tensors and plain containers
        raise ValueError(f"cannot load {str(file)!r}: {name} is not a weights-only state dict ({err})") from err


def _readable(entry: Any) -> dict[str, Any] | None:
    """A ``data`` entry as the plain JSON SB3 writes (for a pickled one: the text beside the pickle)."""
    return entry if isinstance(entry, dict) else None


def _activation(file: Path, metadata: dict[str, Any]) -> str:
    """The hidden layers' activation named by ``policy_kwargs`` (SB3's default for MLPs: Tanh)."""
    kwargs = _readable(metadata.get("policy_kwargs", {}))
    if kwargs is None:
        raise ValueError(f"model {str(file)!r}: policy_kwargs in its metadata is not a table")
    unknown = sorted(
        k
        for k, v in kwargs.items()
        if not k.startswith(":")
        and k not in _INERT_POLICY_KWARGS
        and not (k == "features_extractor_class" and v == _FLATTEN)
    )
    if unknown:
        raise ValueError(
            f"model {str(file)!r}: policy_kwargs {unknown} may change what the policy computes; "
            f"this loader reads MLP policies with the keys {sorted(_INERT_POLICY_KWARGS)} only"
        )
    if "activation_fn" not in kwargs:
        return "Tanh"
    name = _SB3_ACTIVATIONS.get(str(kwargs["activation_fn"]))
    if name is None:
        raise ValueError(
            f"model {str(file)!r}: activation_fn {kwargs['activation_fn']!r} is not supported; "
            f"supported: {sorted(_SB3_ACTIVATIONS)}"
        )
    return name


def _check_spaces(file: Path, metadata: dict[str, Any], inputs: int) -> None:
    """The metadata's observation and action spaces against the tensors and the game."""
    obs, act = _readable(metadata.get("observation_space")), _readable(metadata.get("action_space"))
    if obs is None or act is None:
        raise ValueError(f"model {str(file)!r}: its metadata has no observation_space / action_space")
    if "Box" not in str(obs.get(":type:")) or obs.get("_shape") != [inputs]:
        raise ValueError(
            f"model {str(file)!r}: its metadata says the observation is {obs.get(':type:')} of shape "
            f"{obs.get('_shape')}, but its first layer reads {inputs} inputs (a flat Box of that size)"
        )
    if (
        "Discrete" not in str(act.get(":type:"))
        or str(act.get("n")) != str(NUM_ACTIONS)
        or str(act.get("start", 0)) != "0"
    ):
        raise ValueError(
            f"model {str(file)!r}: its metadata says the actions are {act.get(':type:')} n={act.get('n')}; "
            f"a Conquian model has Discrete({NUM_ACTIONS}) actions"
        )


def _actor_layers(file: Path, state: dict[str, Any], activation: str) -> list[tuple[np.ndarray, np.ndarray, str]]:
    """The actor's (weight, bias, activation) from the policy tensors, checked for shape and values."""
    hidden: dict[tuple[str, int], dict[str, Any]] = {}
    unexpected = []
    for key, value in state.items():
        m = _HIDDEN.fullmatch(str(key))
        if m:
            hidden.setdefault((m.group(1), int(m.group(2))), {})[m.group(3)] = value
        elif key not in _HEADS:
            unexpected.append(key)
    if unexpected:
        raise ValueError(
            f"model {str(file)!r}: unexpected tensors {sorted(map(str, unexpected))[:5]}; "
            "only an MLP policy (flattened observation, Linear layers) can be loaded"
        )
    missing = sorted({"action_net.weight", "action_net.bias"} - set(state))
    for (net, i), parts in hidden.items():
        missing += [f"mlp_extractor.{net}_net.{i}.{p}" for p in ("weight", "bias") if p not in parts]
    if missing:
        raise ValueError(f"model {str(file)!r}: missing tensors {missing} in policy.pth")
    pairs = [
        (f"mlp_extractor.policy_net.{i}", hidden[("policy", i)])
        for _, i in sorted(k for k in hidden if k[0] == "policy")
    ]
    pairs.append(("action_net", {"weight": state["action_net.weight"], "bias": state["action_net.bias"]}))
    layers = []
    for k, (name, parts) in enumerate(pairs):
        w, b = (_as_array(file, f"{name}.{p}", parts[p]) for p in ("weight", "bias"))
        if w.ndim != 2 or b.shape != (w.shape[0],):
            raise ValueError(
                f"model {str(file)!r}: {name} has weight {w.shape} and bias {b.shape}, not (out, in) and (out,)"
            )
        if layers and w.shape[1] != layers[-1][0].shape[0]:
            raise ValueError(
                f"model {str(file)!r}: {name} reads {w.shape[1]} inputs "
                f"but the layer before gives {layers[-1][0].shape[0]}"
            )
        layers.append((w, b, "Identity" if k == len(pairs) - 1 else activation))
    return layers


def _as_array(file: Path, name: str, value: Any) -> np.ndarray:
    import torch

    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        raise ValueError(f"model {str(file)!r}: {name} is not a float tensor")
    out = value.detach().cpu().numpy()
    if not np.isfinite(out).all():
        raise ValueError(f"model {str(file)!r}: {name} holds NaN or infinite values")
    return out


def read_model(path: str | Path) -> ModelFile:
    """Read a MaskablePPO ``.zip`` without running any code from it (clear errors for bad files).

    Only the policy's tensors (``torch.load(weights_only=True)``) and the plain JSON of
    its metadata are read; the layer sizes come from the tensors and are checked against
    the observation the bot will give (:data:`~conquian_env.observation.OBS_SIZE` raw, or
    the ``"meld"`` features) and the metadata.  SB3's own ``MaskablePPO.load`` unpickles
    the metadata, which can run any code: use it only on files you trust.
    """
    file = Path(path)
    if not file.is_file() and file.suffix != ".zip" and file.with_suffix(".zip").is_file():
        file = file.with_suffix(".zip")
    if not file.is_file():
        raise ValueError(f"no model file at {str(path)!r}: give the .zip written by MaskablePPO.save()")
    with _open_zip(file) as zf:
        names = set(zf.namelist())
        missing = sorted({"data", "policy.pth"} - names)
        if missing:
            raise ValueError(f"cannot load {str(file)!r}: the zip lacks {missing} (not a MaskablePPO model)")
        try:
            metadata = json.loads(zf.read("data"))
        except (ValueError, UnicodeDecodeError) as err:
            raise ValueError(f"cannot load {str(file)!r}: its metadata (data) is not JSON ({err})") from err
        if not isinstance(metadata, dict):
            raise ValueError(f"cannot load {str(file)!r}: its metadata (data) is not a JSON object")
        state = _torch_load(zf, "policy.pth", file)
    if not isinstance(state, dict):
        raise ValueError(f"cannot load {str(file)!r}: policy.pth holds {type(state).__name__}, not a state dict")
    activation = _activation(file, metadata)
    layers = _actor_layers(file, state, activation)
    inputs = layers[0][0].shape[1]
    if layers[-1][0].shape[0] != NUM_ACTIONS:
        raise ValueError(
            f"model {str(file)!r} gives {layers[-1][0].shape[0]} action logits; "
            f"a Conquian model needs {NUM_ACTIONS} actions"
        )
    _check_spaces(file, metadata, inputs)
    try:
        features = features_for_size(inputs)
    except ValueError as err:
        raise ValueError(f"model {str(file)!r}: {err}") from err
    return ModelFile(file, dict(state), metadata, activation, features, layers)


def load_policy(path: str | Path) -> NumpyPolicy:
    """The actor of a MaskablePPO ``.zip`` as a :class:`NumpyPolicy`, read weights-only (:func:`read_model`)."""
    return read_model(path).policy()


class PPOAgent(PolicyAgent):
    """A MaskablePPO model file as a bot (spec ``ppo[:PATH.zip]``)."""

    name = "ppo"

    @bounded(deterministic=Flag())
    def __init__(self, path: str | None = None, deterministic: bool = True, seed: int | None = None):
        file = DEFAULT_MODEL if path is None else Path(path)
        if path is None and not file.is_file():
            raise ValueError(f"the shipped model {str(file)!r} is missing from this installation")
        super().__init__(load_policy(file), deterministic=deterministic, seed=seed)
        self.name = "ppo" if path is None else f"ppo:{file.name}"


# --------------------------------------------------------------------------- training files


def save_snapshots(path: str | Path, policies: list[NumpyPolicy]) -> None:
    """Write the learner snapshots ``policies`` to ``path`` (``.npz`` of plain arrays, atomically)."""
    path = Path(path)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(
        tmp,
        **{
            f"s{i}_l{j}_{k}": arr
            for i, p in enumerate(policies)
            for j, layer in enumerate(p.layers)
            for k, arr in (("w", layer[0]), ("b", layer[1]))
        },
        acts=np.array([json.dumps([layer[2] for layer in p.layers]) for p in policies]),
    )
    tmp.replace(path)


def load_snapshots(path: str | Path, features: str) -> list[NumpyPolicy]:
    """The snapshots :func:`save_snapshots` wrote (none when ``path`` does not exist); no pickles are read."""
    path = Path(path)
    if not path.exists():
        return []
    data = np.load(path, allow_pickle=False)
    out = []
    for i, acts in enumerate(data["acts"]):
        layers = [(data[f"s{i}_l{j}_w"], data[f"s{i}_l{j}_b"], a) for j, a in enumerate(json.loads(str(acts)))]
        out.append(NumpyPolicy(layers, features=features))
    return out


def restore_checkpoint(model: Any, path: str | Path, features: str) -> None:
    """Put the policy, its Adam state and the step counters of the checkpoint ``path`` into ``model``.

    ``model`` is a fresh MaskablePPO built from the run's ``config.json``.  The file is read
    weights-only (:func:`read_model`, ``torch.load(weights_only=True)`` for the policy and
    optimizer, plain JSON for the counters): nothing in it is unpickled, so a checkpoint
    cannot run code.  Not restored: SB3's episode-statistics buffer (the rolling
    ``rollout/ep_rew_mean`` in TensorBoard starts afresh) and the last observation (the
    environments are reset, as they are new processes anyway).
    """
    saved = read_model(path)
    if saved.features != features:
        raise ValueError(f"checkpoint {str(path)!r} reads {saved.features!r} features, the run {features!r}")
    try:
        model.policy.load_state_dict(saved.policy_state)
    except RuntimeError as err:  # missing or extra tensors, or sizes unlike config.json's net_arch
        raise ValueError(f"checkpoint {str(path)!r} does not fit the run's network: {err}") from err
    optimizer = saved.optimizer_state()
    if optimizer is not None:
        try:
            model.policy.optimizer.load_state_dict(optimizer)
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"checkpoint {str(path)!r}: its optimizer state does not fit: {err}") from err
    for key in ("num_timesteps", "_n_updates", "_episode_num"):
        value = saved.metadata.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"checkpoint {str(path)!r}: {key} is {value!r}, not a step count")
        setattr(model, key, value)


#: MaskablePPO settings a model file keeps as plain JSON (copied into an export as they are)
_PLAIN_HYPERPARAMETERS = (
    "learning_rate",
    "n_steps",
    "batch_size",
    "n_epochs",
    "gamma",
    "gae_lambda",
    "ent_coef",
    "vf_coef",
    "max_grad_norm",
    "target_kl",
    "normalize_advantage",
    "seed",
)


def export_model(src: str | Path, dest: str | Path) -> Path:
    """Save the policy of the model ``src`` to ``dest`` without its optimizer state (for shipping).

    ``src`` is read weights-only (no code in it runs, :func:`read_model`); ``dest`` is a fresh
    MaskablePPO ``.zip`` holding the same policy tensors and the settings ``src`` keeps as
    plain JSON, which ``MaskablePPO.load`` and the ``ppo`` bot both read.  Needs sb3-contrib.
    """
    import warnings

    import gymnasium
    import torch
    from sb3_contrib import MaskablePPO

    from conquian_env.wrappers import SingleAgentEnv

    from .features import FeatureObservation

    saved = read_model(src)  # clear errors for a missing, corrupt or non-Conquian file
    meta = saved.metadata
    settings: dict[str, Any] = {}
    for key in _PLAIN_HYPERPARAMETERS:
        value = meta.get(key)
        if isinstance(value, bool) == (key == "normalize_advantage") and isinstance(value, (int, float)):
            settings[key] = value
    clip = meta.get("clip_range")
    text = clip.get("value_schedule", "") if isinstance(clip, dict) else ""
    found = re.fullmatch(r"ConstantSchedule\(val=([0-9.eE+-]+)\)", str(text))
    if found:
        settings["clip_range"] = float(found.group(1))
    value_arch = sorted(
        int(k.split(".")[2])
        for k in saved.policy_state
        if k.startswith("mlp_extractor.value_net.") and k.endswith(".weight")
    )
    policy_kwargs: dict[str, Any] = {
        "net_arch": {
            "pi": list(saved.net_arch),
            "vf": [int(saved.policy_state[f"mlp_extractor.value_net.{i}.weight"].shape[0]) for i in value_arch],
        }
    }
    if saved.activation != "Tanh":
        policy_kwargs["activation_fn"] = getattr(torch.nn, saved.activation)
    env: gymnasium.Env = SingleAgentEnv()
    if saved.features == "meld":
        env = FeatureObservation(env)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SB3's note on batch_size vs the one-env rollout buffer
        model = MaskablePPO("MlpPolicy", env, policy_kwargs=policy_kwargs, device="cpu", **settings)
    try:
        model.policy.load_state_dict(saved.policy_state)
    except RuntimeError as err:
        raise ValueError(f"model {str(src)!r}: its tensors do not form a MaskablePPO MLP policy: {err}") from err
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    model.save(dest)
    read_model(dest)
    return dest
