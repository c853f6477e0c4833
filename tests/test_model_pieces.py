"""A new observation piece (a rule variant's, a feature) leaves every shipped model loadable and
playing exactly as before: a model knows the pieces it was trained on (its stamp, or the frozen
table of the layouts that have shipped, conquian_env.model_layouts.SHIPPED_LAYOUTS), and its loader picks
them out of this version's vector by name, leaving out a piece it does not know.

"A later version" is made here by giving conquian_env.model_layouts.FEATURE_SETS layouts with one more
1-wide piece (where the loaders look up this version's layouts); its vectors are today's with that
piece's column put in.  The shipped PPO policy and scorer load under it and choose the same
actions, with the same numbers, as today's on today's vectors; a model whose piece is gone or
resized is refused, naming the piece."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest

from agents.model_files import ModelFileError
from agents.scorer.scorer import DEFAULT_SCORER, ActionScorer, CandidateLayout, candidate_features, load_scorer
from conquian_env import model_layouts
from conquian_env.layout import MELD_FEATURES, OBSERVATION, Layout, Piece
from conquian_env.model_layouts import (
    FEATURE_SETS,
    SHIPPED_LAYOUTS,
    UNSTAMPED_LAYOUTS,
    FeatureSet,
    LayoutMismatchError,
    feature_set_of_model,
    input_columns,
)

NEW = "new_variant"
#: the meld layout the shipped models were trained on (the frozen table's)
SHIPPED_MELD = Layout("meld", SHIPPED_LAYOUTS["2975cb6140054b04"][1])


def _insert(base: Layout, after: str, piece: Piece, name: str | None = None) -> Layout:
    pieces = []
    for p in base.pieces:
        pieces.append(p)
        if p.name == after:
            pieces.append(piece)
    return Layout(name or base.name, pieces)


def _edit(base: Layout, name: str, new: Piece) -> Layout:
    return Layout(base.name, [new if p.name == name else p for p in base.pieces])


def _meld_of(obs: Layout) -> Layout:
    return obs.extend("meld", MELD_FEATURES.pieces[len(OBSERVATION.pieces) :])


def _later_version(monkeypatch, obs: Layout, meld: Layout | None = None) -> tuple[Layout, Layout]:
    """Make ``obs`` (and ``meld``, default: ``obs`` with today's meld features) this version's layouts."""
    meld = _meld_of(obs) if meld is None else meld
    sets = MappingProxyType({"raw": FeatureSet("raw", obs), "meld": FeatureSet("meld", meld)})
    monkeypatch.setattr(model_layouts, "FEATURE_SETS", sets)
    return obs, meld


def _widen(x: np.ndarray, today: Layout, later: Layout, fill: float) -> np.ndarray:
    """Today's vectors ``x`` laid out as ``later``: today's pieces where ``later`` has them, a new one ``fill``."""
    parts = [
        x[:, today.slice(p.name)] if p.name in today.offsets else np.full((len(x), p.size), fill, x.dtype)
        for p in later.pieces
    ]
    return np.ascontiguousarray(np.concatenate(parts, axis=1))


@pytest.fixture(scope="module")
def positions():
    """Positions of games in play: meld features, raw observations, masks and the engine rows."""
    pytest.importorskip("numba")
    from agents.networks.batched import policy_inputs
    from conquian_env.rules import Rules
    from conquian_env.vector import VectorGame

    feats, obs, masks, rows = [], [], [], []
    for forcing in (False, True):
        games = VectorGame(48, seed=11, rules=Rules(forcing=forcing), parallel=False)
        rng = np.random.default_rng(5)
        every = np.arange(games.num_games)
        for _ in range(24):
            f, m = policy_inputs(games, every, "meld")
            o, _ = policy_inputs(games, every, "raw")
            feats.append(f), obs.append(o), masks.append(m.astype(bool)), rows.append(games.state.copy())
            games.step(games.random_actions(rng))
    return np.concatenate(feats), np.concatenate(obs), np.concatenate(masks), np.concatenate(rows)


# ---------------------------------------------------------------- the layouts' side
def test_the_frozen_layouts_hash_to_their_keys():
    """SHIPPED_LAYOUTS is how files that store only a hash are read: each entry must be the layout of its hash."""
    for digest, (name, pieces) in SHIPPED_LAYOUTS.items():
        assert Layout("frozen", pieces).hash == digest and name in FEATURE_SETS
    assert {SHIPPED_LAYOUTS[d][0]: size for size, d in UNSTAMPED_LAYOUTS.items()} == {"raw": 456, "meld": 865}


def test_input_columns_pick_the_model_pieces_out_of_a_later_vector():
    later = _insert(OBSERVATION, "passed", Piece(NEW, 1))
    assert input_columns(OBSERVATION, OBSERVATION) is None
    cols = input_columns(OBSERVATION, later)
    new = later.offset(NEW)
    assert list(cols) == [c for c in range(later.size) if c != new]
    moved = Layout("observation", reversed(OBSERVATION.pieces))  # order is the model's, found by name
    assert np.array_equal(np.arange(OBSERVATION.size)[list(input_columns(moved, OBSERVATION))],
                          np.concatenate([np.arange(OBSERVATION.size)[OBSERVATION.slice(p.name)]
                                          for p in moved.pieces]))  # fmt: skip


@pytest.mark.parametrize(
    "later, message",
    [
        (_edit(OBSERVATION, "forcing", Piece("forcing_rule", 1)), "missing forcing"),
        (_edit(OBSERVATION, "stock_size", Piece("stock_size", 21)), r"resized stock_size \(20 -> 21\)"),
    ],
)
def test_a_piece_gone_or_resized_is_named(later, message):
    with pytest.raises(LayoutMismatchError, match=f"model.zip was trained on pieces .*{message}.*retrain"):
        input_columns(OBSERVATION, later, where="model.zip")


def test_a_stamp_stores_its_pieces_and_a_later_version_reads_it(monkeypatch):
    stamp = FEATURE_SETS["raw"].stamp()
    obs, _ = _later_version(monkeypatch, _insert(OBSERVATION, "forcing", Piece(NEW, 1)))
    fs = feature_set_of_model(stamp, OBSERVATION.size)
    assert fs.layout == OBSERVATION and fs.current.layout == obs
    assert fs.columns() == tuple(c for c in range(obs.size) if c != obs.offset(NEW))  # the new piece: left out
    for unstamped in (456, 865):
        assert feature_set_of_model(None, unstamped).size == unstamped
    assert (
        feature_set_of_model(model_layouts.FEATURE_SETS["raw"].stamp(), obs.size) is model_layouts.FEATURE_SETS["raw"]
    )


def test_stored_pieces_that_do_not_make_a_layout_are_refused():
    stamp = {**FEATURE_SETS["raw"].stamp(), "pieces": [["own_hand", "forty"]]}
    with pytest.raises(LayoutMismatchError, match="list of \\[name, size\\] pairs"):
        feature_set_of_model(stamp, 456)
    stamp["pieces"] = [["own_hand", 40], ["own_hand", 40]]
    with pytest.raises(LayoutMismatchError, match="not a layout.*twice"):
        feature_set_of_model(stamp, 80)


# ---------------------------------------------------------------- the shipped models under a later version
LATER = [
    pytest.param(_insert(OBSERVATION, "forcing", Piece(NEW, 1)), None, id="appended"),
    pytest.param(_insert(OBSERVATION, "own_hand", Piece(NEW, 1)), None, id="first-block"),
    pytest.param(
        _insert(OBSERVATION, "passed", Piece(NEW, 1)),
        _insert(_meld_of(_insert(OBSERVATION, "passed", Piece(NEW, 1))), "live", Piece("new_feature", 1)),
        id="observation-and-meld",
    ),
]


@pytest.mark.parametrize("obs, meld", LATER)
@pytest.mark.parametrize("fill", [0.0, 1.0])
def test_the_shipped_policy_plays_as_before_under_a_later_layout(monkeypatch, positions, obs, meld, fill):
    pytest.importorskip("torch")
    from agents.networks.ppo import DEFAULT_MODEL, load_policy

    feats, _, masks, _ = positions
    today = load_policy(DEFAULT_MODEL)
    assert (today.columns is None) == (MELD_FEATURES == SHIPPED_MELD)  # the same layout: no selection at all
    want = today.logits(feats)
    obs, meld = _later_version(monkeypatch, obs, meld)
    later = load_policy(DEFAULT_MODEL)
    assert later.features == "meld" and later.columns is not None
    got = later.logits(_widen(feats, MELD_FEATURES, meld, fill))
    assert np.array_equal(got, want)  # bit for bit
    best = lambda z: np.argmax(np.where(masks, z, -np.inf), axis=1)  # noqa: E731
    assert np.array_equal(best(got), best(want))


@pytest.mark.parametrize("obs, meld", LATER)
def test_the_shipped_scorer_plays_as_before_under_a_later_layout(monkeypatch, tmp_path, positions, obs, meld):
    feats, _, masks, _ = positions
    chosen = np.flatnonzero(masks[:, 40:82].sum(axis=1) >= 2)[:300]  # a discard or an offer: the scorer decides
    feats, masks = feats[chosen], masks[chosen]
    today = load_scorer(DEFAULT_SCORER)
    x, valid, actions = candidate_features(feats, masks, today.inputs)
    obs, meld = _later_version(monkeypatch, obs, meld)
    later = load_scorer(DEFAULT_SCORER)
    assert later.inputs.layout == SHIPPED_MELD and later.inputs.current == meld
    wide = _widen(feats, MELD_FEATURES, meld, 1.0)
    with pytest.raises(ValueError, match=f"needs \\(N, {meld.size}\\) meld features"):
        candidate_features(feats, masks, later.inputs)  # it reads the later vector, not today's
    x2, valid2, actions2 = candidate_features(wide, masks, later.inputs)
    assert np.array_equal(x2, x) and np.array_equal(valid2, valid) and np.array_equal(actions2, actions)
    assert np.array_equal(later(x2, valid2), today(x, valid))
    decided = 0
    for k in range(0, len(feats), 3):
        a, s = today.candidate_scores(feats[k], masks[k])
        a2, s2 = later.candidate_scores(wide[k], masks[k])
        assert np.array_equal(a, a2) and np.array_equal(s, s2) and a[np.argmax(s)] == a2[np.argmax(s2)]
        decided += 1
    assert decided >= 90
    again = load_scorer(later.save(tmp_path / "again.npz"))  # re-saved: it keeps its own pieces
    assert again.inputs.layout == SHIPPED_MELD and again.meta["layout_hash"] == SHIPPED_MELD.hash


@pytest.mark.parametrize("obs, meld", LATER)
def test_the_compiled_scorer_follows_the_layout(monkeypatch, positions, obs, meld):
    """The compiled twin reads each channel and position input where the layout puts it: the shipped
    scorer under a later layout, and a scorer trained on the later layout, build the same candidates
    and scores as the Python scorer."""
    pytest.importorskip("numba")
    from agents.scorer import scorer_kernels as SK
    from conquian_env import kernels as E

    feats, _, masks, S = positions
    today = load_scorer(DEFAULT_SCORER)
    obs, meld = _later_version(monkeypatch, obs, meld)
    shipped = load_scorer(DEFAULT_SCORER)
    rng = np.random.default_rng(0)
    fresh_inputs = CandidateLayout(meld, meld)  # a scorer trained on the later layout: its new piece is an input
    fresh = ActionScorer([(rng.normal(0, 0.1, (fresh_inputs.size, 8)).astype(np.float32), np.zeros(8, np.float32)),
                          (rng.normal(0, 0.1, (8, 1)).astype(np.float32), np.zeros(1, np.float32))],
                         inputs=fresh_inputs)  # fmt: skip
    wide = _widen(feats, MELD_FEATURES, meld, 1.0)
    chosen = np.flatnonzero(masks[:, 40:82].sum(axis=1) >= 2)[:150]
    for scorer in (shipped, fresh):
        weights, dims, inputs, _, X, acts, out, H, g = SK.network(scorer)
        ref_x, valid, ref_actions = candidate_features(wide[chosen], masks[chosen], scorer.inputs)
        ref_scores = scorer(ref_x, valid)
        for j, r in enumerate(chosen):
            n = SK.candidates_of(wide[r], S[r, E.PHASE], S[r, E.LCARDS], S[r, E.LMISC], X, acts, inputs)
            assert n == valid[j].sum()
            assert np.array_equal(X[:n], ref_x[j, :n]) and np.array_equal(acts[:n], ref_actions[j, :n])
            SK.scores(weights, dims, inputs, X, n, out, H, g)
            np.testing.assert_allclose(out[:n], ref_scores[j, :n], rtol=1e-5, atol=1e-5)
    x_today, valid, _ = candidate_features(feats[chosen], masks[chosen], today.inputs)
    assert np.array_equal(candidate_features(wide[chosen], masks[chosen], shipped.inputs)[0], x_today)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda o: _edit(o, "forcing", Piece("forcing_rule", 1)), "missing forcing"),
        (lambda o: _edit(o, "source", Piece("source", 6)), r"resized source \(5 -> 6\)"),
    ],
)
def test_a_shipped_model_whose_piece_is_gone_or_resized_is_refused_by_name(monkeypatch, edit, message):
    _later_version(monkeypatch, edit(OBSERVATION))
    with pytest.raises(ModelFileError, match=f"scorer file .*conquian_scorer.npz.*{message}.*retrain"):
        load_scorer(DEFAULT_SCORER)
    pytest.importorskip("torch")
    from agents.networks.ppo import DEFAULT_MODEL, read_model

    with pytest.raises(ModelFileError, match=f"model .*conquian_ppo.zip.*{message}.*retrain"):
        read_model(DEFAULT_MODEL)


def test_a_scorer_file_on_an_unshipped_layout_loads_by_its_stored_pieces(tmp_path, positions):
    """A file from a version whose layout never shipped (here: today's without the forcing piece)
    carries its pieces; this version reads it through them, blind to the piece it lacks."""
    feats, _, masks, _ = positions
    older = Layout("meld", [p for p in MELD_FEATURES.pieces if p.name != "forcing"])
    assert older.hash not in SHIPPED_LAYOUTS
    inputs = CandidateLayout(older)
    rng = np.random.default_rng(2)
    scorer = ActionScorer([(rng.normal(0, 0.1, (inputs.size, 4)).astype(np.float32), np.zeros(4, np.float32)),
                           (rng.normal(0, 0.1, (4, 1)).astype(np.float32), np.zeros(1, np.float32))],
                          inputs=inputs)  # fmt: skip
    back = load_scorer(scorer.save(tmp_path / "older.npz"))
    assert back.inputs.layout == older and back.meta["layout_hash"] == older.hash
    x, _, _ = candidate_features(feats[:50], masks[:50], back.inputs)
    full, _, _ = candidate_features(feats[:50], masks[:50])
    today = CandidateLayout(MELD_FEATURES)
    forcing = today.position_slot + int(np.flatnonzero(today.position_columns == MELD_FEATURES.offset("forcing"))[0])
    assert np.array_equal(x, np.delete(full, forcing, axis=-1))


def test_training_goes_on_only_on_the_layout_a_model_was_trained_on(monkeypatch, tmp_path):
    """A model trained before a piece was added plays (above) but neither resumes a run nor is
    exported into an environment whose observations have the piece: refused, naming it."""
    pytest.importorskip("torch")
    from agents.networks.ppo import DEFAULT_MODEL
    from conquian_train.policy_files import export_model, restore_checkpoint

    _later_version(monkeypatch, _insert(OBSERVATION, "forcing", Piece(NEW, 1)))
    with pytest.raises(
        ModelFileError, match=f"checkpoint .*earlier 'meld' layout \\(without [^)]*{NEW}[^)]*\\); a run resumes"
    ):
        restore_checkpoint(None, DEFAULT_MODEL, "meld")
    pytest.importorskip("sb3_contrib")
    with pytest.raises(ModelFileError, match=f"model .*earlier 'meld' layout \\(without [^)]*{NEW}[^)]*\\); export it"):
        export_model(DEFAULT_MODEL, tmp_path / "out.zip")
    assert not (tmp_path / "out.zip").exists()


def test_exit_init_with_a_ppo_model_of_an_earlier_layout_is_refused_in_one_line(monkeypatch, tmp_path, capsys):
    """exit's --init makes the layout check a resume and an export make (before: it skipped it)."""
    pytest.importorskip("sb3_contrib")
    from agents.networks.ppo import DEFAULT_MODEL

    train = pytest.importorskip("train")
    _later_version(monkeypatch, _insert(OBSERVATION, "forcing", Piece(NEW, 1)))
    argv = ["exit", "--out", str(tmp_path / "run"), "--network", "ppo", "--init", str(DEFAULT_MODEL), "--rounds", "1",
            "--games", "4", "--chunk", "4", "--playouts", "10", "--eval-games", "2"]  # fmt: skip
    code = train.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and f"init {str(DEFAULT_MODEL)!r} was trained on an earlier 'meld' layout" in lines[0], err
