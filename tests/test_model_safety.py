"""Model files are data, never code: every path that loads a ``ppo`` model reads weights only.

A MaskablePPO ``.zip`` carries cloudpickled entries in its ``data`` JSON, which SB3's
``MaskablePPO.load`` unpickles.  The "evil" file here is a copy of the shipped model whose
pickled entries create a marker file when unpickled; the first test proves that SB3's own
load does create it, the others that no path of ours ever does (the bot, the evaluation
command, the vector env's opponent, ``conquian-train ppo --export`` and ``--resume``).  Then the
loader's errors for bad files, and the shipped model playing exactly as SB3's load of it.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from agents import SpecError, make_agent
from agents.networks.ppo import DEFAULT_MODEL, NumpyPolicy, load_policy, read_model
from agents.scorer.features import FeatureEncoder
from conquian_arena.match import deal_for_seed, play_game

torch = pytest.importorskip("torch")
sb3c = pytest.importorskip("sb3_contrib")


class _CreatesFile:
    """Unpickled, it opens ``marker`` for writing: the file appears (a harmless stand-in for any code)."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _rewrite(src: Path, dest: Path, **replace: bytes | None) -> Path:
    """A copy of the zip ``src`` with members replaced (``None``: left out)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w") as zout:
        for name in zin.namelist():
            if name in replace:
                if replace[name] is not None:
                    zout.writestr(name, replace[name])
            else:
                zout.writestr(name, zin.read(name))
    return dest


def _metadata(path: Path = DEFAULT_MODEL) -> dict:
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read("data"))


def _tensors(path: Path = DEFAULT_MODEL) -> dict:
    with zipfile.ZipFile(path) as z:
        return torch.load(io.BytesIO(z.read("policy.pth")), weights_only=True)


def _saved(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _evil(tmp_path: Path, meta_edit=None) -> tuple[Path, Path]:
    marker = tmp_path / "marker"
    payload = base64.b64encode(pickle.dumps(_CreatesFile(marker))).decode()
    meta = _metadata()
    for value in meta.values():
        if isinstance(value, dict) and ":serialized:" in value:
            value[":serialized:"] = payload
    if meta_edit:
        meta_edit(meta)
    return _rewrite(DEFAULT_MODEL, tmp_path / "evil.zip", data=json.dumps(meta).encode()), marker


@pytest.fixture
def evil(tmp_path):
    return _evil(tmp_path)


def test_the_evil_file_runs_code_when_sb3_loads_it(evil):
    path, marker = evil
    with pytest.raises(Exception):  # noqa: B017 - whatever SB3 makes of a file object for a class
        sb3c.MaskablePPO.load(path)
    assert marker.exists(), "the payload is live: SB3's load ran it"


def test_the_ppo_bot_loads_weights_only(evil):
    path, marker = evil
    for spec in (f"ppo:{path}", f"ppo:{path},deterministic=false"):
        bot = make_agent(spec, seed=1)
        hands, stock = deal_for_seed(3)
        record = play_game([bot, make_agent("random", seed=2)], hands=hands, stock=stock, seed=3)
        assert record.failure is None
    assert not marker.exists()
    # the weights are the shipped model's: the bot is that model
    for (w, b, a), (w0, b0, a0) in zip(load_policy(path).layers, load_policy(DEFAULT_MODEL).layers, strict=True):
        assert np.array_equal(w, w0) and np.array_equal(b, b0) and a == a0


def test_the_evaluate_command_runs_no_model_code(evil, tmp_path):
    from conquian_arena.tournament import main

    path, marker = evil
    out = tmp_path / "results"
    assert main([f"ppo:{path}", "random", "--games", "2", "-j", "1", "--out", str(out), "--no-progress"]) == 0
    assert (out / "games.jsonl").is_file()
    assert not marker.exists()


def test_a_vector_env_opponent_runs_no_model_code(evil):
    pytest.importorskip("numba")
    from agents.networks.batched import BatchPolicy
    from conquian_env.vector_env import ConquianVectorEnv

    path, marker = evil
    envs = ConquianVectorEnv(4, opponent=f"ppo:{path}", seed=0)
    assert isinstance(envs.core.opponent, BatchPolicy)
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        envs.step(np.array([rng.choice(np.flatnonzero(m)) for m in envs.action_masks()]))
    assert envs.core.opponent_decisions > 0
    assert not marker.exists()


def test_export_runs_no_model_code_and_writes_a_clean_file(evil, tmp_path):
    train = pytest.importorskip("conquian_train.recipes.ppo")  # the ppo recipe: main, TrainConfig, train_ppo
    path, marker = evil
    dest = tmp_path / "ship" / "model.zip"
    assert train.main(["--export", str(path), str(dest)]) == 0
    assert not marker.exists()
    # the export holds no payload of the source: SB3's full load of it runs nothing of the evil file
    model = sb3c.MaskablePPO.load(dest)
    assert not marker.exists()
    shipped = load_policy(DEFAULT_MODEL)
    ours = NumpyPolicy.from_sb3(model.policy)
    for (w, b, _), (w0, b0, _) in zip(ours.layers, shipped.layers, strict=True):
        assert np.array_equal(w, w0) and np.array_equal(b, b0)
    assert model.n_steps == 512 and model.clip_range(1.0) == pytest.approx(0.1)  # plain settings carried over


def _run_folder(tmp_path: Path, checkpoint: Path, total_steps: int) -> Path:
    """A run folder as train.py writes it, with ``checkpoint`` as its latest.zip."""
    train = pytest.importorskip("conquian_train.recipes.ppo")  # the ppo recipe: main, TrainConfig, train_ppo
    out = tmp_path / "run"
    (out / "checkpoints").mkdir(parents=True)
    config = train.TrainConfig(
        out=str(out),
        total_steps=total_steps,
        bc_games=0,
        n_envs=2,
        n_steps=64,
        batch_size=64,
        n_epochs=1,
        eval_every=0,
        eval_games=4,
        checkpoint_every=0,
        workers=1,
        progress=False,
    )
    (out / "config.json").write_text(json.dumps(config.to_dict()))
    (out / "checkpoints" / "latest.zip").write_bytes(checkpoint.read_bytes())
    state = {"best_score": -1.0, "best_step": None, "next_eval": 0, "next_snapshot": 0, "next_checkpoint": 0}
    (out / "checkpoints" / "state.json").write_text(json.dumps({**state, "snapshot_steps": [], "seconds": 0.0}))
    return out


def test_resume_reads_the_checkpoint_weights_only(tmp_path):
    train = pytest.importorskip("conquian_train.recipes.ppo")  # the ppo recipe: main, TrainConfig, train_ppo

    def at_step_64(meta):
        meta["num_timesteps"] = 64

    path, marker = _evil(tmp_path, at_step_64)
    out = _run_folder(tmp_path, path, total_steps=64)  # nothing left to train: the checkpoint as it was
    assert train.main(["--resume", str(out), "--no-progress", "--workers", "1"]) == 0
    assert not marker.exists()
    state = json.loads((out / "checkpoints" / "state.json").read_text())
    assert state["num_timesteps"] == 64, "the step counter comes from the checkpoint"
    shipped, resumed = load_policy(DEFAULT_MODEL), load_policy(out / "final.zip")
    for (w, b, _), (w0, b0, _) in zip(resumed.layers, shipped.layers, strict=True):
        assert np.array_equal(w, w0) and np.array_equal(b, b0)
    # and it trains on from there
    assert train.main(["--resume", str(out), "--total-steps", "192", "--no-progress", "--workers", "1"]) == 0
    assert json.loads((out / "checkpoints" / "state.json").read_text())["num_timesteps"] == 192
    assert not marker.exists()


def test_resume_refuses_a_checkpoint_that_does_not_fit_the_run(tmp_path):
    train = pytest.importorskip("conquian_train.recipes.ppo")  # the ppo recipe: main, TrainConfig, train_ppo
    out = _run_folder(tmp_path, DEFAULT_MODEL, total_steps=64)
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "net_arch": [32]}))
    with pytest.raises(ValueError, match="does not fit the run's network"):
        train.train_ppo(train.TrainConfig.from_dict({**config, "net_arch": [32]}), resume=True)


def test_a_pickled_payload_in_the_tensors_is_refused_unrun(tmp_path):
    marker = tmp_path / "marker"
    state = dict(_tensors())
    state["action_net.bias"] = _CreatesFile(marker)
    bad = _rewrite(DEFAULT_MODEL, tmp_path / "bad.zip", **{"policy.pth": _saved(state)})
    with pytest.raises(SpecError, match="policy.pth is not a weights-only state dict"):
        make_agent(f"ppo:{bad}")
    assert not marker.exists()


def _with_tensors(edit):
    def make(tmp_path):
        state = dict(_tensors())
        edit(state)
        return _rewrite(DEFAULT_MODEL, tmp_path / "m.zip", **{"policy.pth": _saved(state)})

    return make


def _with_metadata(edit):
    def make(tmp_path):
        meta = _metadata()
        edit(meta)
        return _rewrite(DEFAULT_MODEL, tmp_path / "m.zip", data=json.dumps(meta).encode())

    return make


def _first_layer_of(size):
    def edit(state):
        state["mlp_extractor.policy_net.0.weight"] = torch.zeros(256, size)

    return edit


def _shape_in_metadata(meta):
    meta["observation_space"]["_shape"] = [456]


def _bad_bytes(content: bytes):
    def make(tmp_path):
        path = tmp_path / "m.zip"
        path.write_bytes(content)
        return path

    return make


BAD_FILES = {
    "not a zip": (_bad_bytes(b"PK\x03\x04 truncated"), "not a model .zip"),
    "text": (_bad_bytes(b"hello"), "not a model .zip"),
    "no policy": (lambda p: _rewrite(DEFAULT_MODEL, p / "m.zip", **{"policy.pth": None}), r"lacks \['policy.pth'\]"),
    "no metadata": (lambda p: _rewrite(DEFAULT_MODEL, p / "m.zip", data=None), r"lacks \['data'\]"),
    "metadata not json": (lambda p: _rewrite(DEFAULT_MODEL, p / "m.zip", data=b"{oops"), "not JSON"),
    "tensors not a torch file": (
        lambda p: _rewrite(DEFAULT_MODEL, p / "m.zip", **{"policy.pth": b"junk"}),
        "not a weights-only state dict",
    ),
    "missing tensor": (_with_tensors(lambda s: s.pop("action_net.bias")), r"missing tensors \['action_net.bias'\]"),
    "missing bias": (
        _with_tensors(lambda s: s.pop("mlp_extractor.policy_net.2.bias")),
        r"missing tensors \['mlp_extractor.policy_net.2.bias'\]",
    ),
    "wrong shapes": (
        _with_tensors(lambda s: s.update({"mlp_extractor.policy_net.2.weight": torch.zeros(256, 200)})),
        "policy_net.2 reads 200 inputs but the layer before gives 256",
    ),
    "bias shape": (
        _with_tensors(lambda s: s.update({"action_net.bias": torch.zeros(84)})),
        r"action_net has weight \(85, 256\) and bias \(84,\)",
    ),
    "too few actions": (
        _with_tensors(
            lambda s: s.update({"action_net.weight": torch.zeros(84, 256), "action_net.bias": torch.zeros(84)})
        ),
        "gives 84 action logits; a Conquian model needs 85 actions",
    ),
    "not finite": (
        _with_tensors(lambda s: s.update({"action_net.bias": torch.full((85,), float("nan"))})),
        "action_net.bias holds NaN",
    ),
    "integer tensor": (
        _with_tensors(lambda s: s.update({"action_net.bias": torch.zeros(85, dtype=torch.int64)})),
        "action_net.bias is not a float tensor",
    ),
    "extra tensor": (
        _with_tensors(lambda s: s.update({"features_extractor.scale": torch.ones(1)})),
        r"unexpected tensors \['features_extractor.scale'\]",
    ),
    "other observation size": (_with_tensors(_first_layer_of(500)), r"shape \[865\], but its first layer reads 500"),
    "tampered observation shape": (_with_metadata(_shape_in_metadata), r"shape \[456\], but its first layer reads 865"),
    "tampered action space": (
        _with_metadata(lambda m: m["action_space"].update({"n": 84})),
        r"n=84; a Conquian model has Discrete\(85\) actions",
    ),
    "no spaces": (_with_metadata(lambda m: m.pop("observation_space")), "no observation_space"),
    "unknown activation": (
        _with_metadata(
            lambda m: m.update(
                {"policy_kwargs": {":type:": "<class 'dict'>", "activation_fn": "<class 'torch.nn.GELU'>"}}
            )
        ),
        "activation_fn .*GELU.* is not supported",
    ),
    "unknown policy option": (
        _with_metadata(
            lambda m: m.update(
                {"policy_kwargs": {":type:": "<class 'dict'>", "features_extractor_class": "<class 'my.Extractor'>"}}
            )
        ),
        r"policy_kwargs \['features_extractor_class'\] may change what the policy computes",
    ),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_bad_model_files_get_errors_naming_the_fault(case, tmp_path):
    make, message = BAD_FILES[case]
    path = make(tmp_path)
    with pytest.raises(SpecError, match=message):
        make_agent(f"ppo:{path}")
    with pytest.raises(ValueError, match=message):
        load_policy(path)


def test_other_observation_sizes_are_named():
    with pytest.raises(ValueError, match="456 .*865 .*got 500"):
        read_model(_with_tensors_and_shape(500))


def _with_tensors_and_shape(size: int) -> Path:
    import tempfile

    folder = Path(tempfile.mkdtemp())
    state = dict(_tensors())
    _first_layer_of(size)(state)
    meta = _metadata()
    meta["observation_space"]["_shape"] = [size]
    return _rewrite(DEFAULT_MODEL, folder / "m.zip", data=json.dumps(meta).encode(), **{"policy.pth": _saved(state)})


def _positions(n_games: int):
    """(meld features, mask) of the positions met in games of greedy, random and ppo."""
    from agents.base import Agent

    class Recorder(Agent):
        def __init__(self, inner):
            self.inner, self.encoder, self.rows = inner, FeatureEncoder(), []

        def reset(self, player, seed=None):
            self.encoder.reset()
            self.inner.reset(player, seed)

        def act(self, observation, action_mask, view):
            self.rows.append((self.encoder.encode(view), np.asarray(action_mask, bool)))
            return self.inner.act(observation, action_mask, view)

    bots = [Recorder(make_agent(s, seed=5)) for s in ("greedy", "random", "ppo")]
    for g in range(n_games):
        hands, stock = deal_for_seed(700 + g)
        play_game([bots[g % 3], bots[(g + 1) % 3]], hands=hands, stock=stock, seed=g)
    rows = [r for b in bots for r in b.rows]
    return np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])


def test_the_shipped_model_plays_exactly_as_sb3s_load_of_it():
    """The weights-only loader gives the policy SB3's full load gives (the shipped file is trusted)."""
    reference = NumpyPolicy.from_sb3(sb3c.MaskablePPO.load(DEFAULT_MODEL, device="cpu").policy)
    ours = load_policy(DEFAULT_MODEL)
    assert ours.features == reference.features == "meld"
    for (w, b, a), (w0, b0, a0) in zip(ours.layers, reference.layers, strict=True):
        assert np.array_equal(w, w0) and np.array_equal(b, b0) and a == a0
    obs, masks = _positions(9)
    assert len(obs) > 300 and (masks.sum(axis=1) > 1).sum() > 100
    expected = np.argmax(np.where(masks, reference.logits(obs), -np.inf), axis=1)
    assert np.array_equal(np.argmax(np.where(masks, ours.logits(obs), -np.inf), axis=1), expected)


@pytest.mark.parametrize("activation", ["Tanh", "ReLU"])
def test_models_of_other_shapes_load_as_sb3_builds_them(activation, tmp_path):
    from conquian_env.wrappers import SingleAgentEnv

    model = sb3c.MaskablePPO(
        "MlpPolicy",
        SingleAgentEnv(),
        n_steps=32,
        batch_size=32,
        policy_kwargs={"net_arch": {"pi": [24, 16], "vf": [8]}, "activation_fn": getattr(torch.nn, activation)},
        seed=0,
    )
    model.save(tmp_path / "m.zip")
    ours, reference = load_policy(tmp_path / "m.zip"), NumpyPolicy.from_sb3(model.policy)
    assert ours.features == "raw" and [w.shape for w, _, _ in ours.layers] == [(24, 456), (16, 24), (85, 16)]
    assert [a for _, _, a in ours.layers] == [a for _, _, a in reference.layers] == [activation, activation, "Identity"]
    obs = np.random.default_rng(0).integers(0, 2, (50, 456)).astype(np.int8)
    np.testing.assert_array_equal(ours.logits(obs), reference.logits(obs))
