"""Layouts declared once (conquian_env.layout): offsets derived, a stable hash, the kernels'
generated constants kept equal to the declaration, model stamps checked."""

from __future__ import annotations

import importlib.util
import re
import shutil

import numpy as np
import pytest

from conquian_env import layout, observation
from conquian_env.layout import KERNEL_ROW, MELD_FEATURES, OBSERVATION, STATE, Layout, Piece
from conquian_env.model_layouts import (
    FEATURE_SETS,
    LayoutMismatchError,
    feature_set,
    feature_set_for_size,
    feature_set_of_model,
)

BASE = [("a", 3, "first"), ("b", 2), ("c", 1)]


def test_offsets_slices_and_size_derive_from_the_pieces():
    lay = Layout("demo", BASE)
    assert lay.size == 6
    assert dict(lay.offsets) == {"a": 0, "b": 3, "c": 5}
    assert lay.slice("b") == slice(3, 5)
    assert np.arange(6)[lay.slice("c")].tolist() == [5]
    assert lay.rows() == (("a", 0, 3, "first"), ("b", 3, 2, ""), ("c", 5, 1, ""))
    assert lay.extend("more", [("d", 4)]).offset("d") == 6
    with pytest.raises(KeyError, match="no piece 'z'.*a, b, c"):
        lay.offset("z")


@pytest.mark.parametrize(
    "pieces",
    [
        [("a", 3), ("b", 2), ("d", 1)],  # renamed
        [("a", 3), ("b", 3), ("c", 1)],  # resized
        [("b", 2), ("a", 3), ("c", 1)],  # moved
        [("a", 3), ("b", 2)],  # removed
        [("a", 3), ("b", 2), ("c", 1), ("d", 1)],  # added
    ],
)
def test_the_hash_changes_when_a_piece_changes(pieces):
    assert Layout("demo", pieces).hash != Layout("demo", BASE).hash
    assert Layout("demo", pieces) != Layout("demo", BASE)


def test_the_hash_ignores_descriptions_and_the_layout_name():
    reworded = Layout("other", [("a", 3, "reworded"), ("b", 2, "new words"), ("c", 1)])
    assert reworded.hash == Layout("demo", BASE).hash
    assert reworded == Layout("demo", BASE)


def test_the_hashes_of_the_shipped_layouts_are_stable():
    """Model files store these: a change of the hashing (or of a piece) must be deliberate."""
    assert OBSERVATION.hash == "f4cae69b8caa0557"
    assert MELD_FEATURES.hash == "2975cb6140054b04"
    assert (OBSERVATION.size, MELD_FEATURES.size, STATE.size, KERNEL_ROW.size) == (456, 865, 497, 43)


def test_the_rule_pieces_are_the_fields_of_rules():
    """One 1-wide piece per Rules field, in field order, where the layouts have always held them
    (a new field adds its piece here with no edit of the layout)."""
    from conquian_env.rules import Rules

    rules = list(Rules.field_names())
    assert [(p.name, p.size) for p in layout.rule_pieces()] == [(n, 1) for n in rules]
    obs, state = list(OBSERVATION.names), list(STATE.names)
    assert obs[obs.index("forced") + 1 :] == rules
    assert state[state.index("forced") + 1 : state.index("winner")] == rules


@pytest.mark.parametrize(
    "pieces, message",
    [
        ([("a", 3), ("a", 2)], "twice"),
        ([("a", 0)], "positive int"),
        ([("a", -1)], "positive int"),
        ([("a", True)], "positive int"),
        ([("a", 2.0)], "positive int"),
        ([("A", 2)], "lower-case identifier"),
        ([("a b", 2)], "lower-case identifier"),
        ([], "at least one piece"),
    ],
)
def test_bad_pieces_are_refused(pieces, message):
    with pytest.raises(ValueError, match=message):
        Layout("demo", pieces)


def test_numpy_sizes_become_ints():
    piece = Piece("a", np.int64(4))
    assert type(piece.size) is int and Layout("demo", [piece]).size == 4


def test_the_modules_read_the_declared_layouts():
    from agents.scorer import features
    from conquian_env import vector

    assert observation.OBS_LAYOUT == OBSERVATION.rows()
    assert observation.STATE_LAYOUT == tuple(r[:3] for r in STATE.rows())
    assert (observation.OBS_SIZE, observation.STATE_SIZE) == (OBSERVATION.size, STATE.size)
    assert features.FEATURE_LAYOUT == tuple(r[:3] for r in MELD_FEATURES.rows()[len(OBSERVATION.pieces) :])
    assert features.FEATURE_SIZE == MELD_FEATURES.size
    assert vector.ROW_LAYOUT == {**KERNEL_ROW.offsets, "num_columns": KERNEL_ROW.size}


def test_the_feature_docstring_table_is_the_layout():
    from agents.scorer import features

    o = OBSERVATION.size  # the table writes slots after the observation as O+k, its size as O
    table = re.findall(r"^(0|O(?:\+\d+)?)\s+(O|\d+)\s+\S", features.__doc__, flags=re.MULTILINE)
    after = MELD_FEATURES.rows()[len(OBSERVATION.pieces) :]
    assert table == [("0", "O")] + [("O" if s == o else f"O+{s - o}", str(n)) for _, s, n, _ in after]
    assert f"``O + {MELD_FEATURES.size - o}`` slots" in features.__doc__


# ---------------------------------------------------------------- the generated kernel constants
def test_the_generated_kernel_constants_match_the_declaration():
    assert layout.check_generated()
    kernels = pytest.importorskip("conquian_env.kernels")
    for name, value in layout.kernel_constants().items():
        assert getattr(kernels, name) == value, name


def test_a_stale_generated_block_is_found_and_rewritten(tmp_path):
    copy = tmp_path / "kernels.py"
    shutil.copy(layout.KERNELS_FILE, copy)
    text = copy.read_text()
    copy.write_text(text.replace("\nO_RULES = 455\n", "\nO_RULES = 999\n"))
    assert not layout.check_generated(copy)
    assert layout.write_generated(copy)
    assert copy.read_text() == text and layout.check_generated(copy)
    assert not layout.write_generated(copy)  # nothing to do: the file is left as it is


def test_the_kernels_refuse_to_import_with_a_stale_block(tmp_path):
    pytest.importorskip("numba")
    copy = tmp_path / "stale_kernels.py"
    copy.write_text(layout.KERNELS_FILE.read_text().replace("\nO_PHASE = 442\n", "\nO_PHASE = 441\n"))
    spec = importlib.util.spec_from_file_location("conquian_env.stale_kernels_for_test", copy)
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(RuntimeError, match=r"out of date.*O_PHASE.*python -m conquian_env.layout --write"):
        spec.loader.exec_module(module)


def test_a_file_without_the_block_is_named(tmp_path):
    bare = tmp_path / "bare.py"
    bare.write_text("X = 1\n")
    with pytest.raises(ValueError, match="no generated layout block"):
        layout.check_generated(bare)


def test_the_check_command(capsys):
    assert layout.main([]) == 0
    assert "match" in capsys.readouterr().out


# ---------------------------------------------------------------- feature sets of model files
def test_feature_sets_and_their_stamps():
    assert {n: fs.size for n, fs in FEATURE_SETS.items()} == {"raw": 456, "meld": 865, "potential": 1136}
    assert feature_set("meld").stamp() == {
        "feature_set": "meld",
        "layout_hash": MELD_FEATURES.hash,
        "pieces": [[p.name, p.size] for p in MELD_FEATURES.pieces],
    }
    with pytest.raises(ValueError, match="'raw', 'meld'.*got 'image'"):
        feature_set("image")
    assert feature_set_for_size(456).name == "raw" and feature_set_for_size(865).name == "meld"
    assert feature_set_for_size(1136).name == "potential"
    with pytest.raises(ValueError, match="456 .*865 .*got 100"):
        feature_set_for_size(100)


def test_a_model_without_a_stamp_falls_back_to_its_input_size():
    assert feature_set_of_model(None, 865).name == "meld"
    assert feature_set_of_model(None, 456).name == "raw"


def test_a_model_with_its_stamp_loads():
    for fs in FEATURE_SETS.values():
        assert feature_set_of_model(fs.stamp(), fs.size) is fs


def test_a_model_with_another_layout_is_refused_naming_both():
    stamp = {"feature_set": "meld", "layout_hash": "0123456789abcdef"}
    with pytest.raises(
        LayoutMismatchError, match=f"'meld' with layout 0123456789abcdef.*has layout {MELD_FEATURES.hash}"
    ):
        feature_set_of_model(stamp, 865, where="model.zip")


def test_a_model_with_an_unknown_feature_set_is_refused_naming_both():
    stamp = {"feature_set": "image", "layout_hash": "0123456789abcdef"}
    with pytest.raises(
        LayoutMismatchError, match=r"model.zip reads the feature set 'image' \(layout 0123456789abcdef\).*'raw'.*'meld'"
    ):
        feature_set_of_model(stamp, 865, where="model.zip")


def test_a_model_whose_network_does_not_match_its_stamp_is_refused():
    with pytest.raises(LayoutMismatchError, match="'raw'.*456 inputs.*reads 865"):
        feature_set_of_model(FEATURE_SETS["raw"].stamp(), 865)


@pytest.mark.parametrize("stamp", [["meld"], {"feature_set": "meld"}, {"feature_set": 1, "layout_hash": "x"}])
def test_a_malformed_stamp_is_refused(stamp):
    with pytest.raises(LayoutMismatchError, match="stored feature set"):
        feature_set_of_model(stamp, 865)
