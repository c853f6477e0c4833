"""The training side of PPO model files: the learner snapshots, a checkpoint's restore, a model's export.

- :func:`save_snapshots` / :func:`load_snapshots`: the learner snapshots of the opponent pool
  (``checkpoints/snapshots.npz`` of a ``ppo`` run), plain ``.npz`` arrays read as untrusted data.
- :func:`restore_checkpoint`: ``--resume``: the weights, Adam state and counters of a checkpoint
  into a fresh model, weights-only (nothing in the file is unpickled).
- :func:`export_model`: ``conquian-train ppo --export``: the policy without its optimizer state.

The bot that plays a model, and the weights-only reader they all use, are :mod:`agents.networks.ppo`'s.
(Before training had one package these lived in :mod:`agents.networks.ppo`.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from agents.model_files import ModelFileError, check_archive, open_archive, parse_json, read_npy
from agents.networks.card_head import HEAD_ARRAYS, CardHead, card_planes, check_network
from agents.networks.ppo import (
    ACTIVATIONS,
    INPUT_BOUND,
    MAX_TENSOR_ELEMENTS,
    MEMBER_CAPS,
    NumpyPolicy,
    read_model,
    stamp_model,
)
from agents.scorer.features import FeatureObservation
from conquian_env.model_layouts import feature_set
from conquian_env.wrappers import SingleAgentEnv


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
        **{
            f"s{i}_h_{name}": arr
            for i, p in enumerate(policies)
            if p.head is not None
            for name, arr in p.head.arrays.items()
        },  # fmt: skip
        acts=np.array([json.dumps([layer[2] for layer in p.layers]) for p in policies]),
    )
    tmp.replace(path)


#: the most snapshots, and layers per snapshot, a snapshots file may hold
MAX_SNAPSHOTS, MAX_SNAPSHOT_LAYERS = 1000, 16
_SNAPSHOT_MEMBER = re.compile(r"s(\d{1,4})_l(\d{1,2})_([wb])\.npy")
_HEAD_MEMBER = re.compile(r"s(\d{1,4})_h_(\w+)\.npy")


def _snapshot_cap(name: str) -> int | None:
    if name == "acts.npy":
        return 1 << 20
    m = _SNAPSHOT_MEMBER.fullmatch(name)
    if m and int(m.group(1)) < MAX_SNAPSHOTS and int(m.group(2)) < MAX_SNAPSHOT_LAYERS:
        return 4 * MAX_TENSOR_ELEMENTS + 1024
    m = _HEAD_MEMBER.fullmatch(name)
    if m and int(m.group(1)) < MAX_SNAPSHOTS and m.group(2) in HEAD_ARRAYS:
        return 4 * MAX_TENSOR_ELEMENTS + 1024
    return None


def load_snapshots(path: str | Path, features: str) -> list[NumpyPolicy]:
    """The snapshots :func:`save_snapshots` wrote (none when ``path`` does not exist), each with its card head
    if it has one (:mod:`agents.networks.card_head`, reading ``features``); no pickles are read.

    Read as untrusted data (:mod:`agents.model_files`): the archive's directory first (only
    ``acts`` and ``sI_lJ_w/b`` members, each array's size capped), each array's header before its
    data, every weight finite and bounded (:func:`~agents.model_files.check_weights`); a bad file
    gets a :class:`~agents.model_files.ModelFileError` naming it and the fault."""
    path = Path(path)
    if not path.exists():
        return []
    where = f"snapshots file {str(path)!r}"
    limit = MAX_SNAPSHOTS * (2 * MAX_SNAPSHOT_LAYERS + len(HEAD_ARRAYS)) + 1
    with open_archive(path, where, "readable .npz of plain arrays") as zf:
        members = check_archive(zf, where, _snapshot_cap, max_members=limit, max_total=MEMBER_CAPS["policy.pth"] * 4)
        if "acts.npy" not in members:
            raise ModelFileError(f"{where}: no 'acts' array (not a snapshots file of train.py)")
        names = read_npy(zf, members.pop("acts.npy"), where, kinds="Uf", max_bytes=1 << 20, ndims=(1,))
        if names.dtype.kind != "U" and len(names):  # no snapshots: numpy writes an empty float array
            raise ModelFileError(f"{where}: acts has dtype {names.dtype}, expected a unicode string")
        acts = [parse_json(str(text), where, "acts") for text in names]
        if len(acts) > MAX_SNAPSHOTS or not all(
            isinstance(a, list) and 0 < len(a) <= MAX_SNAPSHOT_LAYERS and all(x in ACTIVATIONS for x in a) for a in acts
        ):
            raise ModelFileError(
                f"{where}: acts must list, for at most {MAX_SNAPSHOTS} snapshots, 1 to {MAX_SNAPSHOT_LAYERS} "
                f"activations among {list(ACTIVATIONS)}"
            )
        expected = {f"s{i}_l{j}_{k}.npy" for i, a in enumerate(acts) for j in range(len(a)) for k in "wb"}
        headed = sorted({int(m.group(1)) for m in map(_HEAD_MEMBER.fullmatch, members) if m})
        expected |= {f"s{i}_h_{name}.npy" for i in headed for name in HEAD_ARRAYS}
        if set(members) != expected:
            odd = sorted(set(members) ^ expected)[:5]
            raise ModelFileError(f"{where}: its arrays do not match its acts (e.g. {odd})")
        out = []
        for i, names_i in enumerate(acts):
            layers = []
            for j, act in enumerate(names_i):
                w, b = (
                    read_npy(
                        zf,
                        members[f"s{i}_l{j}_{k}.npy"],
                        where,
                        kinds="f",
                        max_bytes=4 * MAX_TENSOR_ELEMENTS,
                        ndims=(n,),
                    )  # fmt: skip
                    for k, n in (("w", 2), ("b", 1))
                )
                layers.append((f"snapshot {i} layer {j}", w, b, act))
            head = None
            try:
                if i in headed:
                    arrays = {name: read_npy(zf, members[f"s{i}_h_{name}.npy"], where, kinds="f",
                                             max_bytes=4 * MAX_TENSOR_ELEMENTS, ndims=(n,))
                              for name, n in HEAD_ARRAYS.items()}  # fmt: skip
                    head = CardHead(arrays, features, card_planes(features), int(layers[-1][1].shape[1]))
                policy = NumpyPolicy([(w, b, act) for _, w, b, act in layers], features=features, head=head)
            except ValueError as err:
                raise ModelFileError(f"{where}: snapshot {i}: {err}") from err
            if policy.layers[0][0].shape[1] != _input_size(features):
                raise ModelFileError(
                    f"{where}: snapshot {i} reads {policy.layers[0][0].shape[1]} inputs, "
                    f"{features!r} features are {_input_size(features)}"
                )
            named = [
                (f"{n} weight", f"{n} bias", w, b, a) for (n, *_), (w, b, a) in zip(layers, policy.layers, strict=True)
            ]
            check_network(where, named, INPUT_BOUND, head)
            out.append(policy)
    return out


def check_same_layout(saved: Any, where: str, what_to_do: str) -> None:
    """Training continues only on this version's layout (a resume, an export, exit's ``--init``): a model
    trained before a piece was added (it plays, blind to the piece: :attr:`agents.networks.ppo.NumpyPolicy.columns`)
    cannot go on training in an environment whose observations have that piece."""
    if saved.columns is not None:
        new = [n for n in feature_set(saved.features).layout.names if n not in saved.layout.offsets]
        raise ModelFileError(f"{where} was trained on an earlier {saved.features!r} layout ("
                             + (f"without {', '.join(new)}" if new else "its pieces in another order")
                             + f"); {what_to_do}")  # fmt: skip


def _input_size(features: str) -> int:
    return feature_set(features).size


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
        raise ModelFileError(f"checkpoint {str(path)!r} reads {saved.features!r} features, the run {features!r}")
    check_same_layout(saved, f"checkpoint {str(path)!r}", "a run resumes on the layout it started with: resume it "
                      "with the version that wrote it, or start a new run")  # fmt: skip
    try:
        model.policy.load_state_dict(saved.policy_state)
    except RuntimeError as err:  # missing or extra tensors, or sizes unlike config.json's net_arch
        raise ModelFileError(f"checkpoint {str(path)!r} does not fit the run's network: {err}") from err
    optimizer = saved.optimizer_state()
    if optimizer is not None:
        params = [p for group in model.policy.optimizer.param_groups for p in group["params"]]
        for k, entry in optimizer["state"].items():
            param = params[k] if isinstance(k, int) and 0 <= k < len(params) else None
            if param is None:
                raise ModelFileError(f"checkpoint {str(path)!r}: its optimizer state names parameter {k!r}, "
                                     f"the run's network has {len(params)}")  # fmt: skip
            for name, value in entry.items():
                if name in ("exp_avg", "exp_avg_sq") and tuple(value.shape) != tuple(param.shape):
                    raise ModelFileError(f"checkpoint {str(path)!r}: optimizer state {k}.{name} has shape "
                                         f"{tuple(value.shape)}, its parameter {tuple(param.shape)}")  # fmt: skip
                if name == "exp_avg_sq" and bool((value < 0).any()):
                    raise ModelFileError(f"checkpoint {str(path)!r}: optimizer state {k}.{name} is negative")
        try:
            model.policy.optimizer.load_state_dict(optimizer)
        except (ValueError, KeyError, TypeError) as err:
            raise ModelFileError(f"checkpoint {str(path)!r}: its optimizer state does not fit: {err}") from err
    for key in ("num_timesteps", "_n_updates", "_episode_num"):
        value = saved.metadata.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ModelFileError(f"checkpoint {str(path)!r}: {key} is {value!r}, not a step count")
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

    saved = read_model(src)  # clear errors for a missing, corrupt or non-Conquian file
    check_same_layout(saved, f"model {str(src)!r}", "export it with the version that trained it (the ppo bot plays "
                      "it as it is)")  # fmt: skip
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
    stamp_model(model, saved.features)
    model.save(dest)
    read_model(dest)
    return dest
