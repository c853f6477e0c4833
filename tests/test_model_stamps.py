"""Models carry their feature set and layout hash (conquian_env.layout): written into PPO
``.zip`` and scorer ``.npz`` files, checked on load (a wrong one refused, naming both), and a
file written before the stamp (the shipped models) still loads, its feature set inferred."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from agents.model_files import ModelFileError
from agents.scorer.scorer import DEFAULT_SCORER, INPUTS, ActionScorer, candidate_layout, load_scorer
from conquian_env.layout import MELD_FEATURES, OBSERVATION
from tests.conftest import shipped_layout

OTHER_HASH = "0123456789abcdef"
#: the meld layout the shipped models were trained on (today's, until a piece is added)
SHIPPED_MELD = shipped_layout("meld")


def _scorer(seed: int = 0, inputs=INPUTS) -> ActionScorer:
    """A small random scorer reading ``inputs`` (default: this version's)."""
    rng = np.random.default_rng(seed)
    return ActionScorer(
        [
            (rng.normal(0, 0.1, (inputs.size, 8)).astype(np.float32), np.zeros(8, np.float32)),
            (rng.normal(0, 0.1, (8, 1)).astype(np.float32), np.zeros(1, np.float32)),
        ],
        inputs=inputs,
    )


def _with_meta(src: Path, dest: Path, change) -> Path:
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    change(meta)
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(dest, **arrays)
    return dest


def test_a_scorer_file_stores_its_feature_set_and_layout(tmp_path):
    path = _scorer().save(tmp_path / "s.npz")
    meta = load_scorer(path).meta
    assert (meta["feature_set"], meta["layout_hash"]) == ("meld", MELD_FEATURES.hash)


def test_a_scorer_with_another_layout_is_refused_naming_both(tmp_path):
    path = _with_meta(  # a hash with no pieces stored and none known for it
        _scorer().save(tmp_path / "s.npz"), tmp_path / "t.npz", lambda m: [m.update(layout_hash=OTHER_HASH),
                                                                           m.pop("pieces")]
    )  # fmt: skip
    with pytest.raises(
        ModelFileError, match=f"t.npz.*'meld' with layout {OTHER_HASH}.*has layout {MELD_FEATURES.hash}"
    ):
        load_scorer(path)


def test_a_scorer_whose_pieces_do_not_hash_to_its_stamp_is_refused(tmp_path):
    path = _with_meta(
        _scorer().save(tmp_path / "s.npz"), tmp_path / "t.npz", lambda m: m.update(layout_hash=OTHER_HASH)
    )
    with pytest.raises(ModelFileError, match=f"t.npz.*pieces hash to {MELD_FEATURES.hash}, not to .*{OTHER_HASH}"):
        load_scorer(path)


@pytest.mark.parametrize(
    "stamp, message",
    [
        ({"feature_set": "raw", "layout_hash": OBSERVATION.hash}, "feature set 'raw'.*a scorer reads 'meld'"),
        ({"feature_set": "image", "layout_hash": OTHER_HASH}, "'image'.*does not know"),
        ({"feature_set": "meld", "layout_hash": None}, "'layout_hash' strings"),
    ],
)
def test_a_scorer_with_a_wrong_stamp_is_refused(tmp_path, stamp, message):
    path = _with_meta(_scorer().save(tmp_path / "s.npz"), tmp_path / "t.npz", lambda m: m.update(stamp))
    with pytest.raises(ModelFileError, match=message):
        load_scorer(path)


def test_a_scorer_written_before_the_stamp_still_loads(tmp_path):
    with np.load(DEFAULT_SCORER) as z:  # the shipped one is stamped
        assert json.loads(str(z["meta"]))["layout_hash"] == SHIPPED_MELD.hash
    assert load_scorer(DEFAULT_SCORER).layers
    old = _with_meta(  # a file from before the stamp reads the shipped layout
        _scorer(inputs=candidate_layout(SHIPPED_MELD)).save(tmp_path / "s.npz"),
        tmp_path / "old.npz",
        lambda m: [m.pop(k) for k in ("feature_set", "layout_hash", "pieces")],
    )
    again = load_scorer(old).save(tmp_path / "again.npz")  # re-saved: stamped
    assert load_scorer(again).meta["layout_hash"] == SHIPPED_MELD.hash


# ---------------------------------------------------------------- MaskablePPO .zip
pytest.importorskip("torch")


def _rewrite_data(src: Path, dest: Path, change) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w") as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name == "data":
                meta = json.loads(data)
                change(meta)
                data = json.dumps(meta).encode()
            zout.writestr(name, data)
    return dest


def test_the_shipped_model_predates_the_stamp_and_loads_by_its_size():
    from agents.networks.ppo import DEFAULT_MODEL, STAMP_KEY, read_model

    with zipfile.ZipFile(DEFAULT_MODEL) as z:
        assert STAMP_KEY not in json.loads(z.read("data"))
    assert read_model(DEFAULT_MODEL).features == "meld"


def test_a_stamped_model_loads(tmp_path):
    from agents.networks.ppo import DEFAULT_MODEL, STAMP_KEY, read_model

    stamp = {"feature_set": "meld", "layout_hash": SHIPPED_MELD.hash}  # the hash of the layout it was trained on
    path = _rewrite_data(DEFAULT_MODEL, tmp_path / "m.zip", lambda m: m.update({STAMP_KEY: stamp}))
    assert read_model(path).features == "meld"


@pytest.mark.parametrize(
    "stamp, message",
    [
        ({"feature_set": "meld", "layout_hash": OTHER_HASH}, f"'meld' with layout {OTHER_HASH}.*has layout"),
        (
            {"feature_set": "raw", "layout_hash": OBSERVATION.hash},
            f"'raw'.*{OBSERVATION.size} inputs.*reads {SHIPPED_MELD.size}",
        ),
        ({"feature_set": "image", "layout_hash": OTHER_HASH}, "'image' \\(layout 0123456789abcdef\\).*does not know"),
        ("meld", "must be a mapping"),
    ],
)
def test_a_model_with_the_wrong_feature_set_or_layout_is_refused(tmp_path, stamp, message):
    from agents.networks.ppo import DEFAULT_MODEL, STAMP_KEY, read_model

    path = _rewrite_data(DEFAULT_MODEL, tmp_path / "m.zip", lambda m: m.update({STAMP_KEY: stamp}))
    with pytest.raises(ModelFileError, match=f"model '.*m.zip'.*{message}"):
        read_model(path)


def test_stamp_model_writes_the_stamp_into_the_saved_file(tmp_path):
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from agents.networks.ppo import STAMP_KEY, read_model, stamp_model
    from conquian_env.wrappers import SingleAgentEnv

    model = MaskablePPO("MlpPolicy", SingleAgentEnv(), policy_kwargs={"net_arch": [8]}, n_steps=16, device="cpu")
    stamp_model(model, "raw")
    model.save(tmp_path / "raw.zip")
    with zipfile.ZipFile(tmp_path / "raw.zip") as z:
        assert json.loads(z.read("data"))[STAMP_KEY] == {
            "feature_set": "raw",
            "layout_hash": OBSERVATION.hash,
            "pieces": [[p.name, p.size] for p in OBSERVATION.pieces],
        }
    assert read_model(tmp_path / "raw.zip").features == "raw"
    with pytest.raises(ValueError, match="'raw', 'meld'"):
        stamp_model(model, "image")
