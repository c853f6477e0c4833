"""The masked PPO network of RLlib self-play and its checkpoint reader (weights only).

:class:`MaskedPPOTorchRLModule` is the RLModule that :func:`conquian_train.rllib.ppo_config`
trains on :class:`conquian_env.integrations.rllib.ConquianMultiAgentEnv`; :func:`load_module`
reads one back from a trained run or a checkpoint without running any pickle in it, for the bot
:class:`agents.networks.rllib_bot.RLlibAgent` (``rllib:PATH``).  Needs ``ray[rllib]`` and torch.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from conquian_env.extras import missing

try:  # Ray first: its extra's line also says to install torch first
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
    from ray.rllib.core.columns import Columns
    from ray.rllib.utils.torch_utils import FLOAT_MIN
except ImportError as err:
    raise missing(err, "agents.networks.rllib_model", extra="rllib") from None
try:
    import torch
except ImportError as err:
    raise missing(err, "agents.networks.rllib_model", extra="rllib") from None

from conquian_env.actions import NUM_ACTIONS
from conquian_env.integrations.rllib import observation_space
from conquian_env.observation import OBS_SIZE

__all__ = ["MODULE_ID", "MaskedPPOTorchRLModule", "load_module"]

#: the id of the one policy (RLModule) both seats share in :func:`conquian_train.rllib.ppo_config`
MODULE_ID = "shared"


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """RLlib's default PPO torch module with action masking: the logits of illegal actions
    are pushed to the lowest float before sampling, in training and inference.

    The same contract as RLlib's ``ActionMaskingTorchRLModule`` example
    (``ray.rllib.examples.rl_modules.classes.action_masking_rlm``): the observation space is
    ``Dict(observations=..., action_mask=Box(0, 1, (n,)))``, the networks see
    ``observations`` only.  It lives here rather than being imported from ray's examples,
    which are not API (that one still builds on the deprecated ``PPOTorchRLModule``) and
    whose import path checkpoints would record.
    """

    def __init__(
        self,
        *,
        observation_space: spaces.Space | None = None,
        action_space: spaces.Space | None = None,
        inference_only: bool | None = None,
        learner_only: bool = False,
        model_config: Any = None,
        catalog_class: Any = None,
        **kwargs: Any,
    ):
        if not (
            isinstance(observation_space, spaces.Dict)
            and {"observations", "action_mask"} <= set(observation_space.spaces)
        ):
            raise ValueError(
                "MaskedPPOTorchRLModule needs a Dict observation space with the keys 'observations' "
                f"and 'action_mask', got {observation_space}"
            )
        # the networks are built for the observations alone; setup() puts the whole space back
        self.observation_space_with_mask = observation_space
        # (RLlib's "RLModule(config=...) has been deprecated" notice is dropped by the env
        # adapter this module imports: conquian_env.integrations.rllib)
        super().__init__(
            observation_space=observation_space["observations"],
            action_space=action_space,
            inference_only=inference_only,
            learner_only=learner_only,
            model_config=model_config,
            catalog_class=catalog_class,
            **kwargs,
        )

    def setup(self) -> None:
        super().setup()
        self.observation_space = self.observation_space_with_mask

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split_mask(batch)
        return self._mask_logits(super()._forward_inference(batch, **kwargs), mask)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split_mask(batch)
        return self._mask_logits(super()._forward_exploration(batch, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split_mask(batch)
        return self._mask_logits(super()._forward_train(batch, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if isinstance(batch[Columns.OBS], dict):  # the values need no mask
            _, batch = self._split_mask(batch)
        return super().compute_values(batch, embeddings)

    @staticmethod
    def _split_mask(batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """(mask, a shallow copy of the batch whose observation is the observations alone);
        the caller's batch is left as it is (the learner passes one batch to several calls)."""
        obs = batch[Columns.OBS]
        if not isinstance(obs, dict) or "action_mask" not in obs or "observations" not in obs:
            raise ValueError("MaskedPPOTorchRLModule: the observation must be a dict of observations and action_mask")
        batch = dict(batch)
        batch[Columns.OBS] = obs["observations"]
        return obs["action_mask"], batch

    @staticmethod
    def _mask_logits(out: dict[str, Any], mask: Any) -> dict[str, Any]:
        out[Columns.ACTION_DIST_INPUTS] = out[Columns.ACTION_DIST_INPUTS] + torch.clamp(torch.log(mask), min=FLOAT_MIN)
        return out


def load_module(source: Any, module_id: str = MODULE_ID) -> Any:
    """The RLModule of one policy from a trained RLlib run.

    ``source``: an ``Algorithm`` (``algo.get_module(module_id)``), an RLModule (returned as
    is), or the path of a checkpoint: an algorithm checkpoint directory
    (``algo.save_to_path()``), its ``learner_group/learner/rl_module`` directory (a
    MultiRLModule; ``module_id`` picks the policy) or the directory of one RLModule.

    A checkpoint is read without running code from it (RLlib's own ``from_checkpoint``
    unpickles its files with cloudpickle, which can run anything): the module's weights
    (``module_state.pkl``) are unpickled with only numpy's array constructors allowed, its
    class and constructor arguments (``class_and_ctor_args.pkl``) are read as data without
    importing anything they name, and the module is rebuilt here.  So only a
    :class:`MaskedPPOTorchRLModule` (what :func:`conquian_train.rllib.ppo_config` trains) loads from a path;
    for another RLModule class, load it yourself with ``RLModule.from_checkpoint`` (only
    from a checkpoint you trust) and pass the module.
    """
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule
    from ray.rllib.core.rl_module.rl_module import RLModule

    if isinstance(source, MultiRLModule):
        return source[module_id]
    if isinstance(source, RLModule):
        return source
    if hasattr(source, "get_module") and not isinstance(source, (str, Path)):
        module = source.get_module(module_id)
        if module is None:
            raise ValueError(f"the algorithm has no module {module_id!r}")
        return module
    path = Path(source).expanduser().resolve()
    if not path.is_dir():
        raise FileNotFoundError(f"no RLlib checkpoint directory at {path}")
    levels = ("learner_group/learner/rl_module", "learner/rl_module", "rl_module", ".")
    for sub in levels:
        one = path / sub / module_id
        if (one / _CTOR_FILE).exists():
            return _module_from_dir(one)
    if not (path / _CTOR_FILE).exists():
        raise FileNotFoundError(f"{path} is not an RLlib algorithm, MultiRLModule or RLModule checkpoint directory")
    for sub in levels:
        multi = path / sub
        if (multi / _CTOR_FILE).exists() and _pickled_class(multi) == _MULTI_MODULE:
            modules = sorted(p.name for p in multi.iterdir() if (p / _CTOR_FILE).exists())
            raise ValueError(f"the checkpoint {path} has no module {module_id!r} (it has {modules})")
    return _module_from_dir(path)


# ------------------------------------------------------------------ reading checkpoints as data

_CTOR_FILE = "class_and_ctor_args.pkl"
_OUR_MODULE = f"{__name__}.MaskedPPOTorchRLModule"
_MULTI_MODULE = "ray.rllib.core.rl_module.multi_rl_module.MultiRLModule"
_PPO_CATALOG = "ray.rllib.algorithms.ppo.ppo_catalog.PPOCatalog"


class _Named:
    """What a pickle names (a class, a function) read as data: its name and what it was given,
    never imported or called."""

    pickled_name = "?"

    def __init__(self, *args: Any, **kwargs: Any):
        self.args = args

    def __setstate__(self, state: Any) -> None:
        self.state = state


class _AsData(pickle.Unpickler):
    """Unpickles every global the file names as a :class:`_Named` stand-in (nothing imported)."""

    def find_class(self, module: str, name: str) -> Any:
        return type(name, (_Named,), {"pickled_name": f"{module}.{name}"})

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids are not data")


def _numpy_constructors() -> dict[tuple[str, str], Any]:
    core = np._core if hasattr(np, "_core") else np.core  # numpy 2 / 1
    frombuffer, reconstruct, scalar = core.numeric._frombuffer, core.multiarray._reconstruct, core.multiarray.scalar
    allowed = {("numpy", "dtype"): np.dtype, ("numpy", "ndarray"): np.ndarray}
    for package in ("numpy._core", "numpy.core"):
        allowed[(f"{package}.numeric", "_frombuffer")] = frombuffer
        allowed[(f"{package}.multiarray", "_reconstruct")] = reconstruct
        allowed[(f"{package}.multiarray", "scalar")] = scalar
    return allowed


class _ArraysOnly(pickle.Unpickler):
    """Unpickles dicts of numpy arrays and nothing else: any other global is refused."""

    allowed: dict[tuple[str, str], Any] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            import collections

            return collections.OrderedDict
        if not self.allowed:
            type(self).allowed = _numpy_constructors()
        if (module, name) in self.allowed:
            return self.allowed[(module, name)]
        raise pickle.UnpicklingError(f"{module}.{name} is not a numpy array: refused")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids are not arrays")


def _read_as_data(file: Path) -> Any:
    try:
        with open(file, "rb") as f:
            return _AsData(f).load()
    except Exception as err:
        raise ValueError(f"cannot read {file}: {type(err).__name__}: {err}") from err


def _pickled_class(folder: Path) -> str:
    info = _read_as_data(folder / _CTOR_FILE)
    cls = info.get("class") if isinstance(info, dict) else None
    return getattr(cls, "pickled_name", "?")


def _plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def _box_shape(space: Any, key: str) -> Any:
    spaces_ = getattr(space, "state", {}) or {}
    box = spaces_.get("spaces", {}).get(key) if isinstance(spaces_, dict) else None
    state = getattr(box, "state", None)
    return state.get("_shape") if isinstance(state, dict) else None


def _module_from_dir(folder: Path) -> Any:
    """A :class:`MaskedPPOTorchRLModule` rebuilt from the RLModule checkpoint ``folder``, weights only."""
    from ray.rllib.algorithms.ppo.ppo_catalog import PPOCatalog

    info = _read_as_data(folder / _CTOR_FILE)
    cls = info.get("class") if isinstance(info, dict) else None
    name = getattr(cls, "pickled_name", "?")
    if name != _OUR_MODULE:
        what = "an RLModule" if name.endswith("RLModule") else "not an RLModule checkpoint"
        raise ValueError(
            f"{folder} is {what}: it holds a {name}; only a {_OUR_MODULE} is loaded from a path "
            "(weights only). Load another class with RLModule.from_checkpoint, which runs the "
            "checkpoint's pickles (only for a checkpoint you trust), and pass the module"
        )
    args, kwargs = info.get("ctor_args_and_kwargs", (None, None))
    if args != () or not isinstance(kwargs, dict):
        raise ValueError(f"{folder / _CTOR_FILE}: constructor arguments not as RLlib writes them")
    model_config = kwargs.get("model_config") or {}
    inference_only = kwargs.get("inference_only", False)
    if not isinstance(model_config, dict) or not _plain(model_config) or not isinstance(inference_only, bool):
        raise ValueError(f"{folder / _CTOR_FILE}: model_config must be plain settings, got {model_config!r:.200}")
    catalog = getattr(kwargs.get("catalog_class"), "pickled_name", _PPO_CATALOG)
    if catalog != _PPO_CATALOG:
        raise ValueError(f"{folder}: the module was built with the catalog {catalog}, not {_PPO_CATALOG}")
    space = kwargs.get("observation_space")
    shapes = (_box_shape(space, "observations"), _box_shape(space, "action_mask"))
    if shapes != ((OBS_SIZE,), (NUM_ACTIONS,)):
        raise ValueError(
            f"{folder}: the module reads observations of shape {shapes[0]} with masks of {shapes[1]}; "
            f"Conquian's are ({OBS_SIZE},) and ({NUM_ACTIONS},)"
        )
    state = _module_state(folder)
    module = MaskedPPOTorchRLModule(
        observation_space=observation_space(),
        action_space=spaces.Discrete(NUM_ACTIONS),
        inference_only=inference_only,
        model_config=model_config,
        catalog_class=PPOCatalog,
    )
    try:
        module.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()}, strict=True)
    except RuntimeError as err:  # missing, extra or misshapen tensors
        raise ValueError(f"{folder}: the weights do not fit a module of model_config {model_config}: {err}") from err
    return module


def _module_state(folder: Path) -> dict[str, np.ndarray]:
    """The module's weights: ``module_state.pkl`` unpickled with numpy arrays only."""
    meta_file = folder / "metadata.json"
    stem = "module_state"
    if meta_file.exists():
        try:
            stem = str(json.loads(meta_file.read_text()).get("state_file", stem))
        except ValueError as err:
            raise ValueError(f"{meta_file} is not JSON: {err}") from err
    file = folder / f"{Path(stem).name}.pkl"
    if not file.exists():
        raise ValueError(f"{folder}: no {file.name} (the module's weights; msgpack checkpoints are not read)")
    try:
        with open(file, "rb") as f:
            state = _ArraysOnly(f).load()
    except Exception as err:
        raise ValueError(f"{file} is not a file of weights: {type(err).__name__}: {err}") from err
    if not isinstance(state, dict) or not state:
        raise ValueError(f"{file} holds {type(state).__name__}, not a dict of weights")
    for key, value in state.items():
        if not isinstance(key, str) or not isinstance(value, np.ndarray) or value.dtype.kind != "f":
            raise ValueError(f"{file}: {key!r} is not a float array of weights")
        if not np.isfinite(value).all():
            raise ValueError(f"{file}: {key!r} holds NaN or infinite values")
    return state
