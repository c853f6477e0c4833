"""The distilled scorer's recipe (``conquian-train distill``): shards that resume exactly, a fit that
resumes exactly, files checked by name, and a model that plays."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

pytest.importorskip("numba")
torch = pytest.importorskip("torch")

from agents import make_agent  # noqa: E402
from agents.scorer.scorer import GREEDY_SLOT, load_scorer  # noqa: E402
from conquian_arena.match import deal_for_seed, play_game  # noqa: E402
from conquian_env.seeding import derive_seed  # noqa: E402
from conquian_env.vector import deal_cards  # noqa: E402
from conquian_train.cli import main as cli  # noqa: E402
from conquian_train.recipes import distill  # noqa: E402
from conquian_train.seeding import DISTILL_DEALS  # noqa: E402


def _generate(out, playouts=4):
    config = distill.GenerateConfig(out=str(out), games=24, chunk=8, playouts=playouts, seed=5)
    return distill.generate(config, log=lambda _: None)


@pytest.fixture(scope="module")
def labels(tmp_path_factory):
    out = tmp_path_factory.mktemp("distill") / "labels"
    _generate(out)
    return out


def _arrays(path):
    with np.load(path, allow_pickle=False) as d:
        return {k: d[k] for k in d.files}


def test_the_shards_hold_greedys_choices_valued_and_resume_to_the_same_bytes(labels, tmp_path):
    paths = sorted((labels / "shards").glob("s*.npz"))
    assert [p.name for p in paths] == ["s00000.npz", "s00001.npz", "s00002.npz"]
    games = set()
    for p in paths:
        a = distill.read_shard(p)
        valid = a["actions"] >= 0
        assert (valid.sum(1) >= 2).all() and ((a["q"] >= 0) & (a["q"] <= 1)).all()
        # one candidate of each recorded decision is greedy's own choice (the move played)
        assert (np.where(valid, a["x"][:, :, GREEDY_SLOT], 0).sum(1) == 1).all()
        games |= set(a["game"].tolist())
    assert games <= set(range(24)) and len(games) > 20
    # a killed run: a shard missing, the same command makes it again, the same arrays
    again = tmp_path / "again"
    _generate(again)
    (again / "shards" / "s00001.npz").unlink()
    _generate(again)
    for p in paths:
        mine, theirs = _arrays(p), _arrays(again / "shards" / p.name)
        assert mine.keys() == theirs.keys() and all(np.array_equal(mine[k], theirs[k]) for k in mine)
    with pytest.raises(ValueError, match=r"holds a run with other knobs \(playouts\)"):
        _generate(again, playouts=5)


def test_a_games_deal_is_the_arenas_deal_of_its_seed():
    deals, firsts, seats = distill.deals_of(5, 10, 14)
    for g, d in zip(range(10, 14), deals, strict=True):
        assert deal_cards(d) == tuple(deal_for_seed(derive_seed(5, DISTILL_DEALS, g)))
    assert set(firsts.tolist()) <= {0, 1} and set(seats.tolist()) <= {0, 1}


def _fit(data, out, **kw):
    settings = dict(data=(str(data),), out=str(out), hidden=(16, 8), epochs=3, holdout=3, batch=64) | kw
    return distill.FitConfig(**settings)


def test_the_fit_resumes_to_the_network_of_a_fit_never_stopped_and_plays(labels, tmp_path):
    whole = distill.fit(_fit(labels, tmp_path / "whole"), log=lambda _: None)
    distill.fit(_fit(labels, tmp_path / "cut"), log=lambda _: None, stop_after=0)  # a kill after epoch 0
    assert not (tmp_path / "cut" / "scorer.npz").exists()
    lines = []
    cut = distill.fit(_fit(labels, tmp_path / "cut"), log=lines.append)
    assert lines[1] == "resumed after epoch 0"
    a, b = load_scorer(whole), load_scorer(cut)
    assert a.pool_after == b.pool_after == 0
    for (w1, b1), (w2, b2) in zip(a.layers, b.layers, strict=True):
        assert np.array_equal(w1, w2) and np.array_equal(b1, b2)
    assert _same_but_times(tmp_path / "cut" / "fit.csv", tmp_path / "whole" / "fit.csv")
    assert a.meta["recipe"] == "conquian-train distill" and 0 <= a.meta["held_out_regret"] <= 1
    hands, stock = deal_for_seed(9)
    record = play_game([make_agent(f"scorer:{whole}", 0), make_agent("greedy", 1)], hands=hands, stock=stock, seed=9)
    assert record.moves and not record.failure
    with pytest.raises(ValueError, match=r"holds a fit with other knobs \(epochs\)"):
        distill.fit(dataclasses.replace(_fit(labels, tmp_path / "cut"), epochs=4))


def _same_but_times(a, b):
    """The two fit tables row by row, the seconds column aside."""
    ra = [line.rsplit(",", 1)[0] for line in a.read_text().splitlines()]
    rb = [line.rsplit(",", 1)[0] for line in b.read_text().splitlines()]
    return ra == rb and len(ra) == 4


def test_a_plain_scorer_fit_and_bad_knobs(labels, tmp_path):
    path = distill.fit(_fit(labels, tmp_path / "plain", pool_after=-1, epochs=1), log=lambda _: None)
    assert load_scorer(path).pool_after is None
    with pytest.raises(ValueError, match="pool_after 2 is not a hidden layer"):
        _fit(labels, tmp_path / "x", pool_after=2).validate()
    with pytest.raises(ValueError, match=r"kinds must be \['greedy'\]"):
        distill.GenerateConfig(kinds=("random",)).validate()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: a.update(q=a["q"].astype(np.float64)), "q is float64"),
        (lambda a: a.update(x=a["x"][:, :3]), "x is float16"),
        (lambda a: a.pop("game"), r"expected \['actions', 'game', 'meta', 'q', 'x'\]"),
        (lambda a: a["q"].__setitem__((0, 0), np.nan), "not finite"),
        (lambda a: a.update(meta=np.array([{"a": 1}], dtype=object)), "without pickles"),
    ],
)
def test_a_wrong_or_tampered_shard_is_named(labels, tmp_path, change, message):
    arrays = _arrays(labels / "shards" / "s00000.npz")
    change(arrays)
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays)
    with pytest.raises(ValueError, match=message):
        distill.read_shard(bad)


def test_a_missing_shard_or_folder_is_named_by_the_command(labels, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli(["distill", "fit", "--data", str(empty), "--out", str(tmp_path / "f")]) == 2
    assert "no config.json" in capsys.readouterr().err
    copy = tmp_path / "copy"
    (copy / "shards").mkdir(parents=True)
    (copy / "config.json").write_text((labels / "config.json").read_text())
    assert cli(["distill", "fit", "--data", str(copy), "--out", str(tmp_path / "g")]) == 2
    assert "shards ['s00000.npz', 's00001.npz', 's00002.npz'] missing" in capsys.readouterr().err
    assert json.loads((labels / "config.json").read_text())["playouts"] == 4
