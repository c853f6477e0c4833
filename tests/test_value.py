"""The leaf value of a determinized position (agents.value, agents.value_kernels), its recipe
(conquian_train.value) and the search that reads it (spec ``search``'s ``leaf``): the compiled
features and forward pass equal their Python and numpy twins, a playout cut at the leaf is the
greedy playout until then, nothing hidden changes the decisions, the time budget is kept, bad
model files are refused by name, and the data generation resumes after a kill, making the same
games."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("numba")

from agents import SpecError, make_agent  # noqa: E402
from agents import _search_kernels as K  # noqa: E402
from agents import value_kernels as VK  # noqa: E402
from agents.greedy import position_value  # noqa: E402
from agents.model_files import ModelFileError  # noqa: E402
from agents.search import BeliefSearchAgent  # noqa: E402
from agents.value import forward_numpy, layout_hash, load_value, save_value  # noqa: E402
from conquian_env import kernels as E  # noqa: E402
from conquian_env.game import OFFER  # noqa: E402
from conquian_env.melds import can_extend_to_meld, can_split_into_melds  # noqa: E402
from conquian_train import value as recipe  # noqa: E402
from tests.conftest import act, mid_game_state, stats_under_permutations  # noqa: E402

FULL = (1 << 40) - 1


def _weights(seed=0, hidden=8):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(0, 0.5, (VK.NUM_FEATURES, hidden)),
        rng.normal(0, 0.1, hidden),
        rng.normal(0, 0.5, (hidden, 1)),
        rng.normal(0, 0.1, 1),
    )


@pytest.fixture(scope="module")
def value_file(tmp_path_factory):
    return save_value(tmp_path_factory.mktemp("value") / "v.npz", _weights(), {"note": "random weights"})


def _offer_states():
    """Full positions at an offer from greedy games (the leaf value reads positions at an offer)."""
    from conquian_arena.match import deal_for_seed, play_game

    found = []
    greedy = make_agent("greedy")
    for seed in range(3):
        hands, stock = deal_for_seed(seed)

        def keep(before, action, after):
            if before.phase == OFFER:
                found.append(before)

        play_game([greedy, greedy], hands=hands, stock=stock, seed=seed, on_move=keep)
    return found[::3]


def _bits(mask):
    return np.array([(mask >> c) & 1 for c in range(40)], dtype=float)


def python_features(state, p):
    """The features from the GameState, written again in Python (the compiled ones' twin)."""
    q = 1 - p
    hand, opp_hand = state.hands[p], state.hands[q]
    meld, opp_meld = state.melds[p], state.melds[q]
    x = np.zeros(VK.NUM_FEATURES)
    for k, mask in enumerate((hand, meld, opp_hand, opp_meld, state.dead)):
        x[40 * k : 40 * k + 40] = _bits(mask)
    face = state.face_up

    def fits(h, m):
        return can_split_into_melds(m | 1 << face) or can_extend_to_meld(m | 1 << face, h)

    def live(player):
        seen = state.hands[player] | meld | opp_meld | state.dead | (1 << face if face >= 0 else 0)
        return FULL & ~seen

    if face >= 0:
        x[200 + face] = 1
        x[240] = state.player == p
        x[241] = state.player == q
        x[242] = state.source == 0
        x[243] = bool(state.passed)
        x[251], x[252] = fits(hand, meld), fits(opp_hand, opp_meld)
    x[244] = position_value(hand, meld, live(p)) / 11
    x[245] = position_value(opp_hand, opp_meld, live(q)) / 11
    x[246:251] = [hand.bit_count() / 10, opp_hand.bit_count() / 10, meld.bit_count() / 11,
                  opp_meld.bit_count() / 11, state.stock_left / 20]  # fmt: skip
    return x


# ------------------------------------------------------------------ the model


def test_the_feature_layout_is_declared_once():
    assert sum(s for _, s in VK.FEATURE_LAYOUT) == VK.NUM_FEATURES == 253
    assert VK.FEATURE_OFFSETS["offer"] == 240 and VK.FEATURE_OFFSETS["face_fits"] == 251


def test_the_compiled_features_and_value_equal_their_twins():
    w = _weights(3)
    states = _offer_states()
    assert len(states) > 20
    rows = np.array([recipe.full_row(s) for s in states])
    for p in (0, 1):
        x = VK.batch_features(rows, np.full(len(rows), p, dtype=np.int64))
        twin = np.array([python_features(s, p) for s in states])
        np.testing.assert_allclose(x, twin, rtol=0, atol=1e-12)
        S = np.zeros((1, E.NUM_COLUMNS), dtype=np.int64)
        values = []
        for r in rows:
            S[0, : recipe.ROW_COLUMNS] = r
            values.append(VK.leaf_value(S, 0, p, *w, np.zeros(VK.NUM_FEATURES), np.zeros(8)))
        np.testing.assert_allclose(values, forward_numpy(twin, *w), rtol=0, atol=1e-9)
        assert np.ptp(values) > 0.05  # not a constant network


def test_a_playout_cut_at_the_leaf_is_the_greedy_playout_until_then():
    """value_playout with more steps than the game lasts is the greedy playout, result for result;
    with fewer it returns twice the leaf value of the offer greedy's play reached."""
    from agents.rows import view_row
    from conquian_env.view import PlayerView

    w = _weights(5)
    x, h = np.zeros(VK.NUM_FEATURES), np.zeros(8)
    cut = 0
    for seed in range(8):
        state = mid_game_state(seed, 6)
        r, pool, n_opp = view_row(PlayerView(state, state.player))
        info = np.zeros(K.INFO_SIZE, dtype=np.int64)
        info[K.I_RNG] = 12345 + seed
        out, scratch = np.empty(E.NUM_COLUMNS, dtype=np.int64), np.empty(E.NUM_COLUMNS, dtype=np.int64)
        K.determinize(r, pool, n_opp, 1, info, out, scratch)
        me = state.player
        a, b, c = (out.reshape(1, -1).copy() for _ in range(3))
        for s in (a, b, c):
            E.compute_legal(s, 0)
        winner = K.playout(a, 0, *K.new_cache(64))
        half = K.value_playout(b, 0, me, 10_000, *K.new_cache(64), *w, x, h)
        assert half == (1.0 if winner < 0 else (2.0 if winner == me else 0.0))
        half = K.value_playout(c, 0, me, 3, *K.new_cache(64), *w, x, h)
        if c[0, E.PHASE] != E.GAME_OVER:
            cut += 1
            assert c[0, E.PHASE] == OFFER and c[0, E.MOVES] > out[E.MOVES]
            assert half == pytest.approx(2 * VK.leaf_value(c, 0, me, *w, x, h))
    assert cut >= 4


def test_bad_model_files_get_clear_errors(value_file, tmp_path):
    assert load_value(value_file).w0.shape == (VK.NUM_FEATURES, 8)
    w0, b0, w1, b1 = _weights()
    meta = json.dumps({"format": "conquian-value/1", "layout": layout_hash()})
    cases = {
        "missing": None,
        "not a zip": b"hello",
        "nan": dict(w0=np.where(w0 > 1, np.nan, w0), b0=b0, w1=w1, b1=b1, meta=np.array(meta)),
        "huge": dict(w0=w0 * 1e6, b0=b0, w1=w1, b1=b1, meta=np.array(meta)),
        "shape": dict(w0=w0[:-1], b0=b0, w1=w1, b1=b1, meta=np.array(meta)),
        "layout": dict(w0=w0, b0=b0, w1=w1, b1=b1, meta=np.array(meta.replace(layout_hash(), "0" * 16))),
        "format": dict(w0=w0, b0=b0, w1=w1, b1=b1, meta=np.array('{"format": "conquian-belief/1"}')),
        "extra": dict(w0=w0, b0=b0, w1=w1, b1=b1, meta=np.array(meta), evil=np.zeros(2)),
        "lacks": dict(w0=w0, b0=b0, w1=w1, meta=np.array(meta)),
        "pickle": dict(w0=np.array([object()], dtype=object), b0=b0, w1=w1, b1=b1, meta=np.array(meta)),
        "ints": dict(w0=w0.astype(np.int64), b0=b0, w1=w1, b1=b1, meta=np.array(meta)),
    }
    expected = {
        "missing": "no such file",
        "not a zip": "not a value model",
        "nan": "NaN or infinite",
        "huge": "magnitude",
        "shape": "w0 has shape",
        "layout": "feature layout",
        "format": "format",
        "extra": "unexpected archive member 'evil.npy'",
        "lacks": "lacks",
        "pickle": "Python objects",
        "ints": "dtype int64",
    }
    for name, content in cases.items():
        path = tmp_path / f"{name.replace(' ', '_')}.npz"
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, dict):
            np.savez(path, **content)
        with pytest.raises(ModelFileError, match=expected[name]):
            load_value(path)
    with pytest.raises(SpecError, match="no such file"):
        make_agent(f"search:leaf=4,value={tmp_path / 'missing.npz'}")
    with pytest.raises(SpecError, match="leaf"):
        make_agent(f"search:leaf=-1,value={value_file}")
    with pytest.raises(SpecError, match="value=PATH"):
        make_agent("search:leaf=4")
    with pytest.raises(SpecError, match="without leaf"):
        make_agent(f"search:value={value_file}")


# ------------------------------------------------------------------ the search


def test_the_value_search_never_peeks(value_file):
    for seed, moves in [(12, 8), (13, 20)]:
        stats = stats_under_permutations(
            lambda: BeliefSearchAgent(iterations=300, seed=5, leaf=4, value=str(value_file)),
            mid_game_state(seed, moves),
            seed,
        )
        assert stats[0] and all(s == stats[0] for s in stats), stats


def test_the_leaf_changes_the_values_and_the_budget_is_kept(value_file):
    import time

    from conquian_arena.match import deal_for_seed, play_game

    state = mid_game_state(13, 20)
    plain = BeliefSearchAgent(iterations=300, seed=5)
    leafed = BeliefSearchAgent(iterations=300, seed=5, leaf=2, value=str(value_file))
    for bot in (plain, leafed):
        bot.reset(state.player, seed=4)
        act(bot, state)
    means = [m for _, m in leafed.last_stats.values()]
    assert any(m not in (0.0, 0.5, 1.0) and (2 * m * 300) % 1 for m in means)  # fractions: leaf values
    assert plain.last_stats != leafed.last_stats
    bot = make_agent(f"search:time=0.02,leaf=8,value={value_file}", seed=2)
    for g in range(2):
        hands, stock = deal_for_seed(g)
        record = play_game([bot, make_agent("greedy")], hands=hands, stock=stock, seed=g)
        assert record.failure is None
        assert max(record.max_think) < 0.02 + 0.25
    started = time.perf_counter()
    act(bot, state)
    assert time.perf_counter() - started < 0.02 + 0.25


# ------------------------------------------------------------------ the recipe


def test_generate_resumes_after_a_kill_and_makes_the_same_games(tmp_path):
    kinds = ("greedy", "noisy:0.5:greedy")
    whole = recipe.GenerateConfig(out=str(tmp_path / "whole"), games=6, chunk=2, kinds=kinds, seed=3)
    recipe.generate(whole, log=lambda *a: None)
    killed = recipe.GenerateConfig(out=str(tmp_path / "killed"), games=6, chunk=2, kinds=kinds, seed=3)

    def kill_after_first(message):
        if "shard 0 written" in message:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        recipe.generate(killed, log=kill_after_first)
    shards = sorted((tmp_path / "killed" / "shards").iterdir())
    assert [p.name for p in shards] == ["s00000.npz"]
    (tmp_path / "killed" / "shards" / "s00001.npz.x.tmp.npz").write_bytes(b"junk of a killed write")
    first = shards[0].stat().st_mtime_ns
    recipe.generate(killed, log=lambda *a: None)
    assert shards[0].stat().st_mtime_ns == first
    for k in range(3):
        a, _ = recipe.read_shard(recipe.shard_path(tmp_path / "whole", k))
        b, _ = recipe.read_shard(recipe.shard_path(tmp_path / "killed", k))
        assert all(np.array_equal(a[n], b[n]) for n in recipe.SHARD_ARRAYS)
    pos = recipe.load_positions([str(tmp_path / "whole")])
    assert len(set(pos["game"])) == 6
    # every position holds the full deal: 40 cards among hands, melds, dead, face and the stock left
    for r in pos["rows"]:
        seen = r[E.H0] | r[E.H1] | r[E.M0] | r[E.M1] | r[E.DEAD] | (1 << r[E.FACE] if r[E.FACE] >= 0 else 0)
        assert seen.bit_count() + (20 - r[E.SPOS]) == 40
    with pytest.raises(ValueError, match="seed"):
        recipe.generate(recipe.GenerateConfig(out=str(tmp_path / "whole"), games=6, chunk=2, kinds=kinds, seed=4))
    model = recipe.fit(
        recipe.FitConfig(
            data=(str(tmp_path / "whole"),), model=str(tmp_path / "m.npz"), epochs=1, hidden=4, val_every=3
        ),  # fmt: skip
        log=lambda *a: None,
    )
    loaded = load_value(model)
    assert loaded.w0.shape == (VK.NUM_FEATURES, 4)
    x, y, _ = recipe.training_set(pos)
    p = forward_numpy(x, *loaded.weights)
    assert ((0 < p) & (p < 1)).all() and set(np.unique(y)) <= {0.0, 0.5, 1.0}


def test_bad_shards_get_clear_errors(tmp_path):
    bad = tmp_path / "s00000.npz"
    np.savez(bad, rows=np.zeros(3))
    with pytest.raises(ValueError, match="expected"):
        recipe.read_shard(bad)
    with pytest.raises(ValueError, match="games"):
        recipe.GenerateConfig(games=0).validate()
    with pytest.raises(ValueError, match="l2"):
        recipe.FitConfig(l2=-1.0).validate()


def test_the_second_ply_never_peeks_and_counts_its_playouts():
    """``inner``: the searcher's first decision in each playout is searched on its own re-deals of
    what it cannot see there; the decisions still ignore the hidden cards, and the playouts of the
    second ply count in the budget (a deal costs more than one playout per action)."""
    for seed, moves in [(12, 8), (13, 20)]:
        stats = stats_under_permutations(
            lambda: BeliefSearchAgent(iterations=300, seed=5, inner=2), mid_game_state(seed, moves), seed
        )
        assert stats[0] and all(s == stats[0] for s in stats), stats
    state = mid_game_state(13, 20)
    bot = BeliefSearchAgent(iterations=300, seed=5, inner=2)
    bot.reset(state.player, seed=4)
    act(bot, state)
    root = sum(n for n, _ in bot.last_stats.values())
    assert bot.last_iterations > root  # the second ply's own playouts
    assert bot.last_iterations < 300 + 40 * (1 + 2 * 2 * 12)  # the budget, within one deal's cost
    with pytest.raises(SpecError, match="inner"):
        make_agent("search:inner=65")
