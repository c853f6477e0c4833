"""Conquian for RLlib's new API stack: a multi-agent env, self-play PPO with masks, checkpoints.

Needs ``ray[rllib]`` (2.x, new API stack; tested with 2.60).  ``import conquian_env`` never
imports ray; this module does::

    import ray
    from conquian_env.integrations.rllib import ppo_config

    ray.init(num_cpus=2, include_dashboard=False)
    algo = ppo_config(num_env_runners=1).build_algo()
    for _ in range(10):
        result = algo.train()
    path = algo.save_to_path("runs/rllib")            # an algorithm checkpoint directory

    # play it as a bot: spec python:agents.rllib_bot:RLlibAgent,path=runs/rllib, or
    from agents.rllib_bot import RLlibAgent
    bot = RLlibAgent("runs/rllib")

What RLlib gets (:class:`ConquianMultiAgentEnv`):

* agents ``player_0`` and ``player_1``; each step only the player to move gets an
  observation, and acts.  A Conquian turn is several decisions, so the same player often
  gets several observations in a row: RLlib keeps each agent's own sequence of
  observations and actions, whatever the other agent does in between.
* observations ``Dict(observations=Box(0, 1, (456,), float32), action_mask=Box(0, 1,
  (85,), float32))``: the keys and dtypes that RLlib's action-masking RLModule example
  (``ActionMaskingTorchRLModule``) and :class:`MaskedPPOTorchRLModule` read; the values
  are the AEC environment's observation and legal-action mask as floats.
* rewards 0 during the game; when it ends BOTH players get their result (+1 / -1, 0 for a
  draw) with ``terminateds`` true for both and ``"__all__"``, together with each one's final
  observation (game over, an all-zero mask).  The player who did not make the last move
  thereby gets its reward on its own last action, as RLlib's multi-agent episodes want
  (an agent's reward without its observation would be held until its next observation,
  which never comes).
* ``infos``: the numeric infos of ``conquian_env.env(numeric_infos=True)`` (same keys, int
  values, every step), for the agents that got an observation.

``env_config`` keys: ``rules`` (a :class:`~conquian_env.rules.Rules` or a dict of its fields) or
its fields themselves (each a bool, default false), ``illegal_action``
(``"penalize"``, the default: an illegal action loses the game with -1, as in the AEC env;
``"raise"``: it raises, to prove that training never plays one) and ``first`` (0, 1 or
``"random"``, the default: who moves first in each game, drawn from the env's seed).
"""

from __future__ import annotations

import functools
import json
import logging
import pickle
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from ..extras import missing

try:  # Ray first: its extra's line also says to install torch first
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
    from ray.rllib.core.columns import Columns
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
    from ray.rllib.utils.torch_utils import FLOAT_MIN
except ImportError as err:
    raise missing(err, "conquian_env.integrations.rllib", extra="rllib") from None
try:
    import torch
except ImportError as err:
    raise missing(err, "conquian_env.integrations.rllib", extra="rllib") from None

from ..actions import NUM_ACTIONS
from ..env import AGENTS, raw_env
from ..observation import OBS_SIZE
from ..rules import Rules, resolve
from ..seeding import FIRST_PLAYER, stream_rng

__all__ = [
    "MODULE_ID",
    "ConquianMultiAgentEnv",
    "MaskedPPOTorchRLModule",
    "load_module",
    "ppo_config",
]

#: the id of the one policy (RLModule) both seats share in :func:`ppo_config`
MODULE_ID = "shared"

_FIRST_VALUES = (0, 1, "random")


class ConquianMultiAgentEnv(MultiAgentEnv):
    """Conquian as an RLlib ``MultiAgentEnv`` (see the module docstring).

    ``config`` (RLlib's ``env_config``): ``rules`` or its fields, ``illegal_action``, ``first``.
    ``reset(options=...)`` takes the AEC environment's options (``hands``, ``stock``,
    ``first``) for a stacked deal.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        config = dict(config or {})
        known = ("rules", *Rules.field_names(), "illegal_action", "first")
        unknown = sorted(set(config) - set(known))
        if unknown:
            raise ValueError(f"unknown env_config key(s) {unknown}; known: {', '.join(known)}")
        rules = resolve(config.get("rules"), **{k: config[k] for k in Rules.field_names() if k in config})
        self.first = config.get("first", "random")
        if self.first not in _FIRST_VALUES:
            raise ValueError(f"first must be one of {_FIRST_VALUES}, got {self.first!r}")
        self.aec = raw_env(
            rules=rules,
            illegal_action=config.get("illegal_action", "penalize"),
            numeric_infos=True,
        )
        obs_space = spaces.Dict(
            {
                "observations": spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32),
                "action_mask": spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32),
            }
        )
        self.possible_agents = list(AGENTS)
        # both seats stay in the episode from reset to the end (RLlib's checks ask env.agents)
        self.agents = list(AGENTS)
        self.observation_spaces = {a: obs_space for a in AGENTS}
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in AGENTS}
        self._first_rng = np.random.default_rng()

    def _obs(self, agent: str) -> dict[str, np.ndarray]:
        o = self.aec.observe(agent)
        return {
            "observations": o["observation"].astype(np.float32),
            "action_mask": o["action_mask"].astype(np.float32),
        }

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self._first_rng = stream_rng(seed, FIRST_PLAYER)
        options = dict(options or {})
        if "first" not in options and self.first != "random":
            options["first"] = self.first
        elif "first" not in options:
            options["first"] = int(self._first_rng.integers(2))
        self.aec.reset(seed=seed, options=options)
        agent = self.aec.agent_selection
        return {agent: self._obs(agent)}, {agent: dict(self.aec.infos[agent])}

    def step(self, action_dict: dict[str, Any]):
        agent = self.aec.agent_selection
        if self.aec.game is None or self.aec.game.is_terminal():
            raise RuntimeError("the game is over: call reset()")
        if set(action_dict) != {agent}:
            raise ValueError(f"{agent} is to move; got actions for {sorted(action_dict)}")
        self.aec.step(int(action_dict[agent]))
        game = self.aec.game
        assert game is not None
        if game.is_terminal():  # a result (or a forfeit): both seats get theirs, and their last view
            obs = {a: self._obs(a) for a in AGENTS}
            rewards = {a: float(self.aec.rewards[a]) for a in AGENTS}
            terminateds = {**{a: True for a in AGENTS}, "__all__": True}
            infos = {a: dict(self.aec.infos[a]) for a in AGENTS}
        else:
            nxt = self.aec.agent_selection
            obs = {nxt: self._obs(nxt)}
            rewards = {a: 0.0 for a in AGENTS}
            terminateds = {"__all__": False}
            infos = {nxt: dict(self.aec.infos[nxt])}
        return obs, rewards, terminateds, {"__all__": False}, infos

    def render(self) -> str:
        from ..render import render_text

        assert self.aec.game is not None, "call reset() first"
        return render_text(self.aec.game, AGENTS)


class _RLModuleConfigNotice(logging.Filter):
    """Drops RLlib's notice that ``RLModule(config=[RLModuleConfig object])`` is deprecated: RLlib
    2.x's own ``RLModule.__init__`` builds the deprecated ``RLModuleConfig`` on every construction of
    every RLModule (ours passes the keyword arguments RLlib asks for, and so does the
    ``MultiRLModule`` that RLlib builds around it), so the notice names nothing to change."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "RLModule(config=[RLModuleConfig object])" not in record.getMessage()


def _drop_rlmodule_config_notice() -> None:
    """Put the filter on RLlib's deprecation logger once per process: the notice comes once per
    process, from the first RLModule built, which is RLlib's ``MultiRLModule`` when an algorithm is
    built from :func:`ppo_config` (a filter around our own constructor alone missed it); every
    process that builds our module imports this one first (env runners too)."""
    log = logging.getLogger("ray._common.deprecation")
    if not any(isinstance(f, _RLModuleConfigNotice) for f in log.filters):
        log.addFilter(_RLModuleConfigNotice())


_drop_rlmodule_config_notice()


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


def _set_torch_threads(threads: int, *args: Any, **kwargs: Any) -> None:
    import torch

    torch.set_num_threads(threads)


def _shared_policy(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    return MODULE_ID


def ppo_config(
    *,
    num_env_runners: int = 1,
    num_envs_per_env_runner: int = 8,
    train_batch_size: int = 4000,
    minibatch_size: int = 500,
    num_epochs: int = 4,
    lr: float = 3e-4,
    gamma: float = 1.0,
    entropy_coeff: float = 0.01,
    hiddens: tuple[int, ...] = (256, 256),
    env_config: dict[str, Any] | None = None,
    torch_threads: int | None = 1,
    check_env: bool = False,
    seed: int | None = None,
) -> Any:
    """An RLlib ``PPOConfig`` for self-play: both seats play one shared, masked policy.

    One RLModule (:data:`MODULE_ID`, a :class:`MaskedPPOTorchRLModule`, an MLP of
    ``hiddens``) plays ``player_0`` and ``player_1``; the learner runs in the main process on
    the CPU (``num_learners=0``), sampling in ``num_env_runners`` actors of one CPU each
    (0: in the main process), each stepping ``num_envs_per_env_runner`` games at once (its
    forward passes are batched over them: on two cores one env runner samples about 430 env
    steps/s with one game and about 2,000 with eight).  ``torch_threads`` (default 1;
    ``None`` leaves torch alone) is set in the main process and every env runner: on a
    small machine one thread per process is many times faster than torch's default.
    Change anything further on the returned config (``.training(...)``,
    ``.env_runners(...)``) before ``build_algo()``.

    RLlib's env checker is off (``check_env=False``): it steps a reset env with an action
    drawn from the whole ``Discrete(85)`` space, ignoring the mask, which with the default
    ``illegal_action="penalize"`` forfeits that throw-away game with an illegal-action
    warning in every env runner (and raises with ``illegal_action="raise"``).  The env
    passes the check otherwise (the tests run it).
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    config = (
        PPOConfig()
        .environment(ConquianMultiAgentEnv, env_config=dict(env_config or {}), disable_env_checking=not check_env)
        .framework("torch")
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=num_envs_per_env_runner,
            num_cpus_per_env_runner=1,
            rollout_fragment_length="auto",
        )
        .learners(num_learners=0, num_gpus_per_learner=0)
        .multi_agent(policies={MODULE_ID}, policy_mapping_fn=_shared_policy, policies_to_train=[MODULE_ID])
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    MODULE_ID: RLModuleSpec(
                        module_class=MaskedPPOTorchRLModule,
                        model_config={"fcnet_hiddens": list(hiddens), "vf_share_layers": False},
                    )
                }
            )
        )
        .training(
            train_batch_size_per_learner=train_batch_size,
            minibatch_size=minibatch_size,
            num_epochs=num_epochs,
            lr=lr,
            gamma=gamma,
            entropy_coeff=entropy_coeff,
        )
    )
    if torch_threads is not None:
        set_threads = functools.partial(_set_torch_threads, int(torch_threads))
        config = config.callbacks(on_algorithm_init=set_threads, on_environment_created=set_threads)
    if seed is not None:
        config = config.debugging(seed=seed)
    return config


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
    :class:`MaskedPPOTorchRLModule` (what :func:`ppo_config` trains) loads from a path;
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
        observation_space=spaces.Dict(
            {
                "observations": spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32),
                "action_mask": spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32),
            }
        ),
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
