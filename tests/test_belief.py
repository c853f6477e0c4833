"""The belief model of the opponent's hidden hand (agents.search.belief, agents.search.belief_kernels), its
recipe (conquian_train.recipes.belief) and the search that deals from it (spec ``search``): the compiled
forward pass equals its numpy twin, the deals are consistent with the view with exact counts,
nothing hidden changes the belief or the decisions, bad model files are refused by name, and
the data generation resumes after a kill, making the same games."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

pytest.importorskip("numba")

from agents import SpecError, make_agent  # noqa: E402
from agents.search import belief_kernels as BK  # noqa: E402
from agents.search._search_kernels import determinize  # noqa: E402
from agents.search.belief import forward_numpy, load_belief, save_belief  # noqa: E402
from agents.search.pimc import BeliefSearchAgent, PIMCAgent, view_row  # noqa: E402
from conquian_env import kernels as E  # noqa: E402
from conquian_env.cards import cards_of  # noqa: E402
from conquian_env.rules import FORCING  # noqa: E402
from conquian_env.view import PlayerView  # noqa: E402
from conquian_train.recipes import belief as recipe  # noqa: E402
from tests.conftest import act, mid_game_state, permute_hidden, stats_under_permutations  # noqa: E402


def _weights(seed=0, hidden=16):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(0, 0.5, (BK.NUM_FEATURES, hidden)),
        rng.normal(0, 0.1, hidden),
        rng.normal(0, 0.5, (hidden, 1)),
        rng.normal(0, 0.1, 1),
    )


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    return save_belief(tmp_path_factory.mktemp("belief") / "b.npz", _weights(), {"note": "random weights"})


def _states():
    return [s for s in (mid_game_state(seed, moves) for seed, moves in [(11, 0), (12, 8), (13, 20), (14, 30)]) if s]


# ------------------------------------------------------------------ the model


def test_the_compiled_forward_pass_equals_its_numpy_twin():
    w = _weights(3)
    for state in _states():
        row, pool, n_opp = view_row(PlayerView(state, state.player))
        X = np.zeros((len(pool), BK.NUM_FEATURES))
        BK.card_features(row, pool, n_opp, X)
        out = np.empty(len(pool))
        BK.forward(X, len(pool), *w, out)
        np.testing.assert_allclose(out, forward_numpy(X, *w), rtol=0, atol=1e-6)
        assert np.abs(out).max() > 0.1  # not a trivially zero network
    X = np.random.default_rng(1).normal(size=(300, BK.NUM_FEATURES))  # dense inputs too
    out = np.empty(300)
    BK.forward(X, 300, *w, out)
    np.testing.assert_allclose(out, forward_numpy(X, *w), rtol=0, atol=1e-6)


def test_the_feature_layout_is_declared_once():
    assert BK.NUM_FEATURES == sum(size for _, size in BK.FEATURE_LAYOUT)
    assert BK.F_POSITION + dict(BK.FEATURE_LAYOUT)["position"] == BK.NUM_FEATURES
    state = _states()[2]
    row, pool, n_opp = view_row(PlayerView(state, state.player))
    X = np.zeros((len(pool), BK.NUM_FEATURES))
    BK.card_features(row, pool, n_opp, X)
    rank = X[:, BK.F_RANK : BK.F_RANK + 10]
    assert (rank.argmax(1) == pool % 10).all() and (rank.sum(1) == 1).all()
    assert np.allclose(X[:, BK.F_POSITION + 2], n_opp / 10)


@pytest.mark.parametrize("n_opp", [0, 1, 4, 9, 12])
def test_the_probabilities_add_up_to_the_hidden_hand(n_opp):
    logits = np.random.default_rng(n_opp).normal(0, 3, 12)
    BK.exact_count_logits(logits, 12, n_opp)
    with np.errstate(over="ignore"):
        p = 1 / (1 + np.exp(-logits))
    assert abs(p.sum() - n_opp) < 1e-8


def test_deals_from_the_belief_are_consistent_with_the_view(model_file):
    """Every deal: exactly the hidden-hand size to the opponent, every unseen card dealt once
    (hand or stock), no card the player can see moved; zero-odds cards only when nothing else
    is left; a card of overwhelming odds always dealt to the opponent."""
    model = load_belief(model_file)
    for state in _states():
        view = PlayerView(state, state.player)
        row, pool, n_opp = view_row(view)
        opp = 1 - state.player
        odds = np.exp(model.pool_logits(row, pool, n_opp))
        odds[0] = 1e12  # a sure card
        odds[-3:] = 0.0  # impossible cards (there are more other cards than n_opp)
        info = np.array([0, 0, 0, 12345, 0], dtype=np.int64)
        out, scratch = np.empty(E.NUM_COLUMNS, np.int64), np.empty(E.NUM_COLUMNS, np.int64)
        for tries in (1, 5):
            for _ in range(200):
                determinize(row, pool, odds, n_opp, tries, info, out, scratch)
                hand = int(out[E.H0 + opp])
                stock = out[E.STOCK0 + row[E.SPOS] : E.STOCK0 + E.STOCK_SIZE]
                assert hand.bit_count() == n_opp
                assert sorted(cards_of(hand) + stock.tolist()) == pool.tolist()
                assert hand >> int(pool[0]) & 1
                assert not any(hand >> int(c) & 1 for c in pool[-3:])
                same = [c for c in range(E.NUM_COLUMNS) if c != E.H0 + opp and not E.STOCK0 <= c]
                assert (out[same] == row[same]).all()
    n = 6  # fewer positive-odds cards than the hand: the zero-odds cards fill it
    pool = np.arange(n, dtype=np.int64)
    row = np.zeros(E.NUM_COLUMNS, np.int64)
    odds = np.array([1.0, 2.0, 0.0, 0.0, 0.0, 0.0])
    BK.deal_from_belief(row, pool, odds, 4, info, 3, out)
    assert int(out[E.H1]).bit_count() == 4 and out[E.H1] & 3 == 3


def test_deals_follow_the_odds():
    """Card by card in proportion to the odds: with one card to draw the frequencies are the
    odds' shares; the deal's marginals are in the belief's order."""
    pool = np.arange(5, dtype=np.int64)
    row = np.zeros(E.NUM_COLUMNS, np.int64)
    odds = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    freq = BK.hand_frequencies(row, pool, odds, 1, 7, 20000)
    np.testing.assert_allclose(freq, odds / odds.sum(), atol=0.01)
    freq = BK.hand_frequencies(row, pool, odds, 3, 7, 20000)
    assert abs(freq.sum() - 3) < 1e-9 and (np.diff(freq) > 0).all()


def test_the_belief_ignores_the_hidden_cards(model_file):
    model = load_belief(model_file)
    for i, state in enumerate(_states()):
        rng = random.Random(i)
        base = model.probabilities(PlayerView(state, state.player))
        assert abs(base.sum() - state.hands[1 - state.player].bit_count()) < 1e-6
        for _ in range(3):
            variant = permute_hidden(state, rng)
            np.testing.assert_array_equal(model.probabilities(PlayerView(variant, state.player)), base)


# ------------------------------------------------------------------ model files


def _tamper(path, tmp_path, **changes):
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    for k, v in changes.items():
        if v is None:
            arrays.pop(k)
        else:
            arrays[k] = v
    out = tmp_path / f"bad{len(list(tmp_path.iterdir()))}.npz"
    np.savez(out, **arrays)
    return out


def test_bad_model_files_get_clear_errors(model_file, tmp_path):
    w0 = load_belief(model_file).w0
    meta = json.loads(str(np.load(model_file)["meta"]))
    cases = {
        "no such file": tmp_path / "missing.npz",
        "expected exactly": _tamper(model_file, tmp_path, b1=None),
        "shape": _tamper(model_file, tmp_path, w0=w0[:-1]),
        "not finite": _tamper(model_file, tmp_path, w0=np.where(np.eye(*w0.shape) > 0, np.nan, w0)),
        "dtype": _tamper(model_file, tmp_path, w0=w0.astype(np.float32)),
        "feature layout": _tamper(model_file, tmp_path, meta=np.array(json.dumps({**meta, "layout": "0" * 16}))),
        "format": _tamper(model_file, tmp_path, meta=np.array(json.dumps({"format": "something"}))),
        "not JSON": _tamper(model_file, tmp_path, meta=np.array("{oops")),
    }
    (tmp_path / "text.npz").write_text("not a zip")
    cases["not a readable"] = tmp_path / "text.npz"
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, w0=np.array([object()], dtype=object), b0=w0[0], w1=w0, b1=w0[0], meta=np.array("{}"))
    cases["pickles"] = pickled
    for words, path in cases.items():
        with pytest.raises(ValueError, match=words):
            load_belief(path)
    with pytest.raises(SpecError, match="no such file"):
        make_agent(f"search:belief={tmp_path / 'missing.npz'}")


# ------------------------------------------------------------------ the search


def test_the_belief_search_never_peeks(model_file):
    for seed, moves in [(12, 8), (13, 20)]:
        stats = stats_under_permutations(
            lambda: BeliefSearchAgent(iterations=300, seed=5, belief=str(model_file)), mid_game_state(seed, moves), seed
        )
        assert stats[0] and all(s == stats[0] for s in stats), stats


def test_the_permutation_check_catches_a_peeking_belief_search(model_file, monkeypatch):
    """A belief search handed the true hand (the model's odds replaced by the truth) is caught."""

    def peeking(self, row, pool, n_opp):
        if not hasattr(self, "_view"):  # the kernels' warm-up at the bot's first game, before any search
            return np.ones(len(pool))
        hidden = self._view._state.hands[1 - self._view.player]
        return np.array([1e9 if hidden >> int(c) & 1 else 1e-9 for c in pool])

    real_search = BeliefSearchAgent.search

    def remember(self, view):
        self._view = view
        return real_search(self, view)

    monkeypatch.setattr(BeliefSearchAgent, "deal_odds", peeking)
    monkeypatch.setattr(BeliefSearchAgent, "search", remember)
    stats = stats_under_permutations(
        lambda: BeliefSearchAgent(iterations=300, seed=5, belief=str(model_file)), mid_game_state(13, 20), seed=13
    )
    assert any(s != stats[0] for s in stats[1:])


def test_search_specs(model_file):
    bot = make_agent(f"search:iterations=200,belief={model_file}", seed=1)
    assert isinstance(bot, BeliefSearchAgent) and bot.tries == 1 and bot.iterations == 200
    plain = make_agent("pimc:iterations=200", seed=1)
    assert type(plain) is PIMCAgent and plain.tries == 10
    # search with uniform deals and the filter is pimc, move for move
    state = mid_game_state(13, 20)
    a, b = make_agent("pimc:iterations=300", seed=1), make_agent("search:iterations=300,uniform=true,tries=10", seed=1)
    for bot in (a, b):
        bot.reset(state.player, seed=4)
    assert act(a, state) == act(b, state) and a.last_stats == b.last_stats
    with pytest.raises(SpecError, match="tries"):
        make_agent(f"search:tries=0,belief={model_file}")


def test_the_belief_search_plays_whole_games_and_keeps_its_budget(model_file):
    import time

    from conquian_arena.match import deal_for_seed, play_game

    bot = BeliefSearchAgent(time=0.02, seed=2, belief=str(model_file))
    for g in range(2):
        hands, stock = deal_for_seed(g)
        record = play_game([bot, make_agent("greedy")], hands=hands, stock=stock, seed=g)
        assert record.failure is None
        assert max(record.max_think) < 0.02 + 0.25
    started = time.perf_counter()
    act(bot, mid_game_state(13, 20))
    assert time.perf_counter() - started < 0.02 + 0.25


# ------------------------------------------------------------------ the recipe


def test_generate_resumes_after_a_kill_and_makes_the_same_games(tmp_path):
    kinds = ("greedy", "noisy:0.5:greedy", "random")
    whole = recipe.GenerateConfig(out=str(tmp_path / "whole"), games=6, chunk=2, kinds=kinds, seed=3)
    recipe.generate(whole, log=lambda *a: None)
    killed = recipe.GenerateConfig(out=str(tmp_path / "killed"), games=6, chunk=2, kinds=kinds, seed=3)

    def kill_after_first(message):
        if "shard 0 written" in message:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        recipe.generate(killed, log=kill_after_first)
    shards = sorted((tmp_path / "killed" / "shards").iterdir())
    assert [p.name for p in shards] == ["s00000.npz"]  # nothing half-written
    (tmp_path / "killed" / "shards" / "s00001.npz.x.tmp.npz").write_bytes(b"junk of a killed write")
    first = shards[0].stat().st_mtime_ns
    recipe.generate(killed, log=lambda *a: None)
    assert shards[0].stat().st_mtime_ns == first  # a shard made is never made again
    for k in range(3):
        a, _ = recipe.read_shard(recipe.shard_path(tmp_path / "whole", k))
        b, _ = recipe.read_shard(recipe.shard_path(tmp_path / "killed", k))
        assert all(np.array_equal(a[n], b[n]) for n in recipe.SHARD_ARRAYS)
    positions = recipe.load_positions([str(tmp_path / "whole")])
    assert set(positions["kind"]) == set(kinds) and len(set(positions["game"])) == 6
    rows, pools, sizes, n_opps, labels = recipe.pool_arrays(positions)
    assert (labels.sum(1) == n_opps).all() and (n_opps <= sizes).all()
    other = recipe.GenerateConfig(out=str(tmp_path / "whole"), games=6, chunk=2, kinds=kinds, seed=4)
    with pytest.raises(ValueError, match="seed"):
        recipe.generate(other)
    model = recipe.fit(
        recipe.FitConfig(
            data=(str(tmp_path / "whole"),), out=str(tmp_path / "fit"), epochs=1, hidden=4, val_every=3
        ),  # fmt: skip
        log=lambda *a: None,
    )
    assert model == tmp_path / "fit" / "belief.npz" and load_belief(model).hidden == 4
    assert json.loads((tmp_path / "fit" / "config.json").read_text())["hidden"] == 4
    with pytest.raises(ValueError, match=r"holds a fit with other knobs \(epochs\)"):
        recipe.fit(recipe.FitConfig(data=(str(tmp_path / "whole"),), out=str(tmp_path / "fit"), epochs=2, hidden=4,
                                    val_every=3))  # fmt: skip
    with pytest.raises(ValueError, match="holds games of the rules"):
        recipe.fit(recipe.FitConfig(data=(str(tmp_path / "whole"),), out=str(tmp_path / "forcing"), epochs=1,
                                    hidden=4, val_every=3, rules=FORCING))  # fmt: skip


def test_bad_kinds_and_shards_get_clear_errors(tmp_path):
    for kinds, message in [
        (("noisy:lots:greedy",), r"eps must be a number in \[0, 1\], got 'lots'"),
        (("noisy:1.5:greedy",), r"eps must be a number in \[0, 1\], got 1.5"),
        (("noisy:0.2",), "expected noisy:EPS:SPEC"),
        (("noisy:0.2:nonsense",), "unknown bot 'nonsense'"),
    ]:
        with pytest.raises(SpecError, match=message):
            recipe.GenerateConfig(kinds=kinds).validate()
    with pytest.raises(SpecError):
        recipe.GenerateConfig(kinds=("greedy", "nonsense")).validate()
    bad = tmp_path / "s00000.npz"
    np.savez(bad, rows=np.zeros(3))
    with pytest.raises(ValueError, match="expected"):
        recipe.read_shard(bad)


def test_generate_on_ray_makes_the_same_shards(tmp_path):
    try:
        import ray  # noqa: F401
    except ImportError:
        config = recipe.GenerateConfig(out=str(tmp_path / "r"), games=2, chunk=1, kinds=("greedy",), ray="local")
        with pytest.raises(ImportError, match="needs Ray"):
            recipe.generate(config, log=lambda *a: None)
        pytest.skip("Ray is not installed (the 'ray' extra): only its clear error is checked")
    kinds = ("greedy", "random")
    for name, ray_address in (("here", ""), ("ray", "local")):
        recipe.generate(recipe.GenerateConfig(out=str(tmp_path / name), games=4, chunk=2, kinds=kinds, seed=5,
                                              ray=ray_address), log=lambda *a: None)  # fmt: skip
    for k in range(2):
        a, _ = recipe.read_shard(recipe.shard_path(tmp_path / "here", k))
        b, _ = recipe.read_shard(recipe.shard_path(tmp_path / "ray", k))
        assert all(np.array_equal(a[n], b[n]) for n in recipe.SHARD_ARRAYS)
