"""The action scorer (:mod:`agents.scorer.scorer`): its inputs, its file, its bot, and its fit."""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

from agents import make_agent
from agents.greedy.greedy import GreedyAgent
from agents.scorer import scorer
from agents.scorer.features import FeatureEncoder
from agents.scorer.scorer import (
    CANDIDATE_SIZE,
    DEFAULT_SCORER,
    FORMAT,
    FORMAT_POOLED,
    GREEDY_SLOT,
    ActionScorer,
    ScorerAgent,
    candidate_features,
    load_scorer,
)
from conquian_arena.match import deal_for_seed, play_game
from conquian_env.actions import DISCARD_BASE, REFUSE, TAKE
from conquian_env.cards import NUM_CARDS
from conquian_env.game import DISCARD, OFFER
from conquian_env.layout import MELD_FEATURES, OBSERVATION
from conquian_env.model_layouts import FEATURE_SETS
from conquian_env.observation import OBS_AT
from conquian_train.imitation import ImitationData
from tests.conftest import RULE_CASES, mid_game_state, stats_under_permutations


def _random_scorer(seed=0, hidden=(16, 8)):
    rng = np.random.default_rng(seed)
    sizes = (CANDIDATE_SIZE, *hidden, 1)
    return ActionScorer([(rng.normal(0, 0.3, (a, b)).astype(np.float32), rng.normal(0, 0.1, b).astype(np.float32))
                         for a, b in zip(sizes, sizes[1:], strict=False)])  # fmt: skip


def _positions(n_games=6, seed=0):
    """(features, mask, view) of every offer and discard with a choice in greedy self-play."""
    out, encoders = [], [FeatureEncoder(), FeatureEncoder()]

    class Keep(GreedyAgent):
        def act(self, observation, mask, view):
            f = encoders[view.player].encode(view)
            if view.phase in (OFFER, DISCARD) and mask.sum() > 1:
                out.append((f, np.asarray(mask, bool), view.snapshot()))
            return super().act(observation, mask, view)

    for g in range(n_games):
        for e in encoders:
            e.reset()
        hands, stock = deal_for_seed(seed + g)
        play_game([Keep(), Keep()], hands=hands, stock=stock, seed=g)
    return out


def test_the_candidates_are_the_legal_discards_take_and_refuse():
    positions = _positions()
    feats = np.stack([p[0] for p in positions])
    masks = np.stack([p[1] for p in positions])
    x, valid, actions = candidate_features(feats, masks)
    assert x.shape == (len(positions), 12, CANDIDATE_SIZE)
    for i, (f, mask, view) in enumerate(positions):
        acts = actions[i][valid[i]]
        assert sorted(acts.tolist()) == sorted(a for a in np.flatnonzero(mask) if a >= DISCARD_BASE and a <= REFUSE)
        assert (actions[i][~valid[i]] == -1).all() and (x[i][~valid[i]] == 0).all()
        greedy = GreedyAgent().choose(view)
        assert x[i][valid[i], GREEDY_SLOT].tolist() == [float(a == greedy) for a in acts]
        for k in np.flatnonzero(valid[i]):
            a = actions[i, k]
            if a < TAKE:  # a discard: slot 0 (own hand) of its card is set
                assert x[i, k, 0] == 1.0
            elif a == TAKE:  # a take: its card is the face-up card (channel 3)
                assert x[i, k, 3] == 1.0 and f[OBS_AT["face_up"] + view.face_up] == 1.0
            else:  # a refusal touches no card
                assert not x[i, k, :112].any()


def test_candidate_features_name_bad_shapes():
    with pytest.raises(ValueError, match=rf"\(N, {MELD_FEATURES.size}\) meld features"):
        candidate_features(np.zeros((2, OBSERVATION.size)), np.zeros((2, 85), bool))
    with pytest.raises(ValueError, match=r"\(N, 85\) masks"):
        candidate_features(np.zeros((2, MELD_FEATURES.size)), np.zeros((3, 85), bool))


def test_the_candidate_blocks_follow_the_layout():
    # every piece of the meld features is a card channel, greedy's choice or part of the position
    card = [p.name for p in MELD_FEATURES.pieces if p.size == NUM_CARDS]
    assert list(scorer.CARD_PIECES) == card and scorer.CHANNELS == len(card)
    assert scorer.CARD_BLOCKS == sum(p.size == NUM_CARDS for p in OBSERVATION.pieces)
    assert list(scorer.POSITION_PIECES) == [n for n in MELD_FEATURES.names if n not in card and n != "greedy_action"]
    position_size = sum(MELD_FEATURES.piece(n).size for n in scorer.POSITION_PIECES)
    assert scorer.CANDIDATE_SIZE == scorer.POSITION_SLOT + position_size
    # and the inputs are those pieces: a discard of card c reads slot c of each channel, in order,
    # then the position pieces in order
    rng = np.random.default_rng(3)
    features = rng.random((4, MELD_FEATURES.size), dtype=np.float32)
    masks = np.zeros((4, 85), bool)
    cards = [0, 9, 17, 25, 39]
    masks[:, [DISCARD_BASE + c for c in cards]] = True
    x, valid, actions = candidate_features(features, masks)
    for i in range(4):
        assert actions[i][valid[i]].tolist() == [DISCARD_BASE + c for c in cards]
        for k, c in enumerate(cards):
            channels = [features[i, MELD_FEATURES.offset(n) + c] for n in card]
            assert x[i, k, : scorer.CHANNELS].tolist() == channels
            position = np.concatenate([features[i, MELD_FEATURES.slice(n)] for n in scorer.POSITION_PIECES])
            assert np.array_equal(x[i, k, scorer.POSITION_SLOT :], position)


def test_the_input_table_in_the_docstring_is_the_derived_one():
    rows = [line.split()[:2] for line in scorer.__doc__.splitlines() if re.match(r"\d+\s+\d+\s", line)]
    c = scorer.CHANNELS
    want = [(0, c), (c, 4 * (c + 1)), (5 * c + 4, c), (scorer.KIND_SLOT, 4),
            (scorer.POSITION_SLOT, scorer.CANDIDATE_SIZE - scorer.POSITION_SLOT)]  # fmt: skip
    assert [(int(a), int(b)) for a, b in rows] == want
    assert scorer.KIND_SLOT == scorer.CARD_INPUTS == 6 * c + 4


def test_a_scorer_file_round_trips(tmp_path):
    scorer = _random_scorer()
    path = scorer.save(tmp_path / "s.npz", {"note": "test"})
    back = load_scorer(path)
    assert back.meta["format"] == FORMAT and back.meta["note"] == "test" and back.meta["hidden"] == [16, 8]
    x = np.random.default_rng(1).random((5, 12, CANDIDATE_SIZE), dtype=np.float32)
    assert np.array_equal(scorer(x), back(x))
    assert not list(tmp_path.glob("*.tmp*"))  # written atomically, nothing left behind


def _tampered(tmp_path, **change):
    scorer = _random_scorer()
    arrays = {f"w{i}": w for i, (w, _) in enumerate(scorer.layers)} | {
        f"b{i}": b for i, (_, b) in enumerate(scorer.layers)
    }
    meta = {"format": FORMAT, "candidate_size": CANDIDATE_SIZE, **FEATURE_SETS["meld"].stamp()}  # this version's
    meta.update(change.pop("meta", {}))
    arrays["meta"] = np.array(json.dumps(meta))
    arrays.update(change)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        ({"meta": {"format": "something-else/9"}}, "format 'something-else/9'"),
        ({"meta": {"candidate_size": 99}}, "made for 99 inputs"),
        ({"meta": None}, "no JSON 'meta'"),
        ({"w1": np.zeros((3, 8), np.float32)}, "w1 has shape"),
        ({"b0": np.zeros(5, np.float32)}, "b0 has shape"),
        ({"w0": np.full((CANDIDATE_SIZE, 16), np.nan, np.float32)}, "NaN"),
        ({"w0": np.zeros((CANDIDATE_SIZE, 16), np.int64)}, "expected floats"),
        ({"w9": np.zeros(2, np.float32)}, "arrays"),
        ({"w2": np.zeros((8, 2), np.float32), "b2": np.zeros(2, np.float32)}, "2 outputs"),
    ],
)
def test_a_wrong_or_tampered_scorer_file_is_named(tmp_path, change, message):
    if change.get("meta", 0) is None:
        path = _tampered(tmp_path)
        data = dict(np.load(path))
        del data["meta"]
        np.savez(path, **data)
    else:
        path = _tampered(tmp_path, **change)
    with pytest.raises(ValueError, match=message):
        load_scorer(path)


def test_a_scorer_file_holding_a_pickle_is_refused_and_runs_nothing(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, meta=np.array([{"format": FORMAT}], dtype=object), w0=np.zeros((CANDIDATE_SIZE, 1), np.float32),
             b0=np.zeros(1, np.float32))  # fmt: skip
    with pytest.raises(ValueError, match="pickles are refused: a model file is a readable .npz of plain arrays"):
        load_scorer(path)
    (tmp_path / "junk.npz").write_bytes(b"not a zip at all")
    with pytest.raises(ValueError, match="not a readable"):
        load_scorer(tmp_path / "junk.npz")
    with pytest.raises(ValueError, match="no such file"):
        load_scorer(tmp_path / "missing.npz")
    with pytest.raises(ValueError, match="scorer"):
        make_agent(f"scorer:{tmp_path / 'junk.npz'}")


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_the_scorer_bot_plays_legal_moves_and_is_deterministic(tmp_path, rules):
    path = _random_scorer(3).save(tmp_path / "s.npz")
    bot = make_agent(f"scorer:{path}", seed=1)
    assert isinstance(bot, ScorerAgent)
    for g in range(8):
        hands, stock = deal_for_seed(400 + g)
        players = [bot, make_agent("random", seed=g)][:: 1 if g % 2 else -1]
        first = play_game(players, hands=hands, stock=stock, seed=g, rules=rules)
        assert first.failure is None  # an illegal move would be a failure of the game loop
        again = play_game(players, hands=hands, stock=stock, seed=g, rules=rules)
        assert again.actions == first.actions


def test_the_scorer_bot_plays_its_highest_score_and_greedy_melds(tmp_path):
    path = _random_scorer(4).save(tmp_path / "s.npz")
    bot = ScorerAgent(path)
    for f, mask, view in _positions(3, seed=30):
        bot.reset(view.player)
        action = bot.act(None, mask, view)
        scores = bot.scorer.action_scores(f, mask)
        assert action == int(np.argmax(scores)) and mask[action]
        assert set(bot.last_stats) == {a for a in np.flatnonzero(mask) if a >= DISCARD_BASE}


def test_the_scorer_bot_sees_only_the_players_view(tmp_path):
    path = _random_scorer(5).save(tmp_path / "s.npz")
    for seed, moves in ((13, 20), (21, 9), (8, 31)):
        stats = stats_under_permutations(lambda: ScorerAgent(path), mid_game_state(seed, moves), seed=seed)
        assert stats[0] and all(s == stats[0] for s in stats[1:])


def test_the_shipped_scorer_loads_and_is_the_default():
    assert DEFAULT_SCORER.is_file() and DEFAULT_SCORER.stat().st_size < 2_000_000
    bot = make_agent("scorer")
    assert bot.name == "scorer" and bot.path == DEFAULT_SCORER
    assert "greedy_held_out_regret" in bot.scorer.meta  # its fit's numbers travel with it


@pytest.mark.parametrize("pool_after", [None, 0])
def test_fit_scorer_learns_a_rule_from_values(pool_after):
    """Values that prefer refusing at an offer and any discard but greedy's: the fit learns the
    rule (held-out regret far below greedy's on the same positions), a plain scorer and a deep-sets
    one; the saved network scores as the torch network it was fitted as."""
    pytest.importorskip("torch")
    from conquian_train.scorer_fit import ScorerSettings, fit_scorer

    positions = _positions(30, seed=50)
    rows = []
    for g, (f, mask, view) in enumerate(positions):
        q = np.full(85, np.nan, np.float32)
        legal = np.flatnonzero(mask)
        if view.phase == OFFER:
            q[legal] = 0.2
            q[REFUSE] = 0.8
        else:
            q[legal] = 0.5
            q[GreedyAgent().choose(view)] = 0.2
        rows.append((f, mask, int(np.nanargmax(q)), 0.0, q, g))
    data = ImitationData.from_decisions(rows, "meld")
    settings = ScorerSettings(hidden=(32,), epochs=6, lr=3e-3, pool_after=pool_after)
    scorer, report = fit_scorer(data, settings, seed=0)
    final = min(r["held_out_regret"] for r in report)
    assert final < 0.05 < report[0]["greedy_held_out_regret"]
    assert scorer.meta["held_out_regret"] == pytest.approx(final, abs=1e-5)
    assert any(r["kept"] for r in report)
    assert scorer.pool_after == pool_after

    import torch

    from conquian_train.scorer_fit import network_scores, scorer_network

    net = scorer_network((CANDIDATE_SIZE, 32, 1), 0, pool_after)
    with torch.no_grad():
        for lin, (w, b) in zip(net.linears if pool_after is not None else net[::2], scorer.layers, strict=True):
            lin.weight.copy_(torch.from_numpy(w.T.copy()))
            lin.bias.copy_(torch.from_numpy(b))
        some = positions[:40]
        x, valid, _ = candidate_features(np.stack([p[0] for p in some]), np.stack([p[1] for p in some]))
        ref = network_scores(net, torch.from_numpy(x), torch.from_numpy(valid)).numpy()
    np.testing.assert_allclose(np.where(valid, scorer(x, valid), 0), np.where(valid, ref, 0), atol=1e-4)


@pytest.mark.parametrize(
    "kw, message",
    [({"hidden": ()}, "hidden"), ({"epochs": 0}, "epochs"), ({"temperature": 0}, "temperature"),
     ({"holdout": 1}, "holdout"), ({"pool_after": 2}, "pool_after"), ({"pool_after": True}, "pool_after")],
)  # fmt: skip
def test_scorer_settings_name_bad_values(kw, message):
    from conquian_train.scorer_fit import ScorerSettings

    with pytest.raises(ValueError, match=message):
        ScorerSettings(**kw)


def test_a_position_is_scored_the_same_alone_and_in_a_batch():
    positions = _positions(2, seed=70)
    scorer = _random_scorer(6)
    feats = np.stack([p[0] for p in positions])
    masks = np.stack([p[1] for p in positions])
    x, valid, actions = candidate_features(feats, masks)
    batch = scorer(x)
    rng = random.Random(0)
    for i in rng.sample(range(len(positions)), 10):
        alone = scorer.action_scores(feats[i], masks[i])
        assert np.allclose(alone[actions[i][valid[i]]], batch[i][valid[i]], atol=1e-6)


def _pooled_scorer(seed=0, pool_after=0):
    rng = np.random.default_rng(seed)
    shapes = [(CANDIDATE_SIZE, 16), (48, 8), (8, 1)] if pool_after == 0 else [(CANDIDATE_SIZE, 16), (16, 8), (24, 1)]
    return ActionScorer([(rng.normal(0, 0.3, s).astype(np.float32), rng.normal(0, 0.1, s[1]).astype(np.float32))
                         for s in shapes], pool_after=pool_after)  # fmt: skip


def test_a_pooled_scorer_scores_each_candidate_with_the_others():
    """Deep sets: a candidate's score moves when another candidate leaves the position (a plain
    scorer's does not), the batch (with its valid mask) gives each position's own scores, and the
    numpy pooling is [h, mean, max] over the valid candidates."""
    positions = _positions(2, seed=71)
    feats = np.stack([p[0] for p in positions])
    masks = np.stack([p[1] for p in positions])
    x, valid, actions = candidate_features(feats, masks)
    for pool_after in (0, 1):
        scorer = _pooled_scorer(3, pool_after)
        batch = scorer(x, valid)
        for i in random.Random(1).sample(range(len(positions)), 10):
            alone = scorer.action_scores(feats[i], masks[i])
            assert np.allclose(alone[actions[i][valid[i]]], batch[i][valid[i]], atol=1e-5)
        i = int(np.argmax(valid.sum(1)))  # a position with many candidates
        n = int(valid[i].sum())
        full, fewer = scorer(x[i, :n]), scorer(x[i, : n - 1])
        assert not np.allclose(full[: n - 1], fewer, atol=1e-6)
        plain = _random_scorer(3)
        assert np.allclose(plain(x[i, :n])[: n - 1], plain(x[i, : n - 1]))
    # the pooled layer by hand
    scorer = _pooled_scorer(4)
    (w0, b0), (w1, b1), (w2, b2) = scorer.layers
    h = np.maximum(x[i, :n] @ w0 + b0, 0)
    joined = np.concatenate([h, np.tile(h.mean(0), (n, 1)), np.tile(h.max(0), (n, 1))], 1)
    assert np.allclose(scorer(x[i, :n]), (np.maximum(joined @ w1 + b1, 0) @ w2 + b2)[:, 0], atol=1e-5)
    with pytest.raises(ValueError, match="scores a position's candidates together"):
        scorer(x[i, 0])


def test_a_pooled_scorer_file_round_trips_and_plays(tmp_path):
    scorer = _pooled_scorer(5)
    path = scorer.save(tmp_path / "p.npz")
    back = load_scorer(path)
    assert back.pool_after == 0 and back.meta["format"] == FORMAT_POOLED and back.meta["pool_after"] == 0
    x = np.random.default_rng(1).random((5, 12, CANDIDATE_SIZE), dtype=np.float32)
    assert np.array_equal(scorer(x), back(x))
    bot = make_agent(f"scorer:{path}")
    hands, stock = deal_for_seed(3)
    record = play_game([bot, GreedyAgent()], hands=hands, stock=stock, seed=3)
    assert record.moves


@pytest.mark.parametrize(
    "meta, arrays, message",
    [
        ({"format": FORMAT_POOLED}, {}, "needs a 'pool_after'"),
        ({"pool_after": 0}, {}, "has no a 'pool_after'"),
        ({"format": FORMAT_POOLED, "pool_after": 2}, {}, "pool_after 2 is not a hidden layer"),
        ({"format": FORMAT_POOLED, "pool_after": "0"}, {}, "pool_after '0'"),
        ({"format": FORMAT_POOLED, "pool_after": 1}, {}, r"w1 has shape \(48, 8\), expected \(16, n\)"),
        ({"format": FORMAT_POOLED, "pool_after": 0}, {"w1": np.zeros((16, 8), np.float32)}, r"expected \(48, n\)"),
    ],
)
def test_a_wrong_pooled_scorer_file_is_named(tmp_path, meta, arrays, message):
    scorer = _pooled_scorer(6)
    info = {"format": FORMAT, "candidate_size": CANDIDATE_SIZE, **FEATURE_SETS["meld"].stamp()} | meta
    data = {f"w{i}": w for i, (w, _) in enumerate(scorer.layers)}
    data |= {f"b{i}": b for i, (_, b) in enumerate(scorer.layers)}
    data.update(arrays, meta=np.array(json.dumps(info)))
    np.savez(tmp_path / "bad.npz", **data)
    with pytest.raises(ValueError, match=message):
        load_scorer(tmp_path / "bad.npz")
