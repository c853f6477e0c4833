"""The compiled search (spec ``pimc``): its playouts equal greedy play, its deals are
consistent with the view, it finds wins and avoids losses in stacked end games, it never
peeks, never plays an illegal move, keeps its budget, and its analysis call."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

pytest.importorskip("numba")

from agents import SpecError, make_agent  # noqa: E402
from agents.base import RandomAgent  # noqa: E402
from agents.greedy.greedy import NEIGHBOURS, PARTNERS, GreedyAgent, choose_discard  # noqa: E402
from agents.scorer import scorer_kernels as SK  # noqa: E402
from agents.search import _search_kernels as K  # noqa: E402
from agents.search import pimc as search_module  # noqa: E402
from agents.search.pimc import PIMCAgent, analyze, view_row  # noqa: E402
from conquian_env import kernels as E  # noqa: E402
from conquian_env.actions import DISCARD_BASE, NUM_ACTIONS, TAKE  # noqa: E402
from conquian_env.cards import FULL_MASK, cards_of, mask_of, parse_card  # noqa: E402
from conquian_env.game import DISCARD, DISCARDED, MELD, OFFER, TURNED, new_game  # noqa: E402
from conquian_env.melds import can_extend_to_meld, can_split_into_melds  # noqa: E402
from conquian_env.vector import VectorGame  # noqa: E402
from conquian_env.view import PlayerView  # noqa: E402
from tests.conftest import (  # noqa: E402
    RULE_CASES,
    act,
    duplicate,
    mid_game_state,
    permute_hidden,
    stats_under_permutations,
)

# ------------------------------------------------------------------ playouts


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_playouts_play_greedy_move_for_move(rules):
    """The one-step greedy takes of :func:`playout` reach the very state (move count
    included) that :func:`greedy_action` one decision at a time reaches."""
    games = VectorGame(600, observations=False, parallel=False, seed=5, rules=rules)
    rng = np.random.default_rng(5)
    for i in range(games.num_games):  # random openings of 0..40 moves
        for _ in range(rng.integers(0, 40)):
            if games.state[i, E.PHASE] == E.GAME_OVER:
                break
            E.apply(games.state, i, E.random_legal(games.state, i, rng.random()))
    fast, slow = games.state.copy(), games.state.copy()
    cache = K.new_cache(1 << 8)  # small: the cache is emptied many times on the way
    for i in range(games.num_games):
        assert K.playout(fast, i, *cache) == K.playout_by_decision(slow, i)
    np.testing.assert_array_equal(fast[:, : E.LCARDS], slow[:, : E.LCARDS])


def test_cache_size_is_checked():
    with pytest.raises(ValueError, match="power of two"):
        K.new_cache(100)


# ------------------------------------------------------------------ determinizations


def _positions(count: int, seed: int = 0):
    out = []
    for s in range(seed, seed + 200):
        for moves in (0, 10, 25, 40):
            state = mid_game_state(s, moves)
            if state is not None:
                out.append(state)
            if len(out) == count:
                return out
    return out


def test_deals_are_consistent_with_the_view():
    info = np.zeros(K.INFO_SIZE, dtype=np.int64)
    info[K.I_RNG] = 12345
    out = np.empty(E.NUM_COLUMNS, dtype=np.int64)
    scratch = np.empty(E.NUM_COLUMNS, dtype=np.int64)
    for state in _positions(25):
        me, opp = state.player, 1 - state.player
        view = PlayerView(state, me)
        row, pool, n_opp = view_row(view)
        assert n_opp == state.hands[opp].bit_count()
        assert mask_of_cards(pool) == view.unseen()
        for tries in (1, 10):
            for _ in range(40):
                K.determinize(row, pool, None, n_opp, tries, info, out, scratch)
                hidden = int(out[E.H0 + opp])
                stock = out[E.STOCK0 + state.stock_pos : E.STOCK0 + E.STOCK_SIZE]
                # what the player sees stays put; the unseen cards are split in the same sizes
                assert out[E.H0 + me] == state.hands[me]
                assert (out[E.M0], out[E.M1], out[E.DEAD]) == (state.melds[0], state.melds[1], state.dead)
                assert (out[E.FACE], out[E.PHASE], out[E.PLAYER], out[E.SPOS]) == (
                    state.face_up,
                    state.phase,
                    state.player,
                    state.stock_pos,
                )
                assert hidden.bit_count() == n_opp and hidden & ~view.unseen() == 0
                assert sorted(cards_of(hidden) + list(stock)) == sorted(pool.tolist())


def mask_of_cards(cards) -> int:
    mask = 0
    for c in cards:
        mask |= 1 << int(c)
    return mask


def _python_implausibility(state, opp: int) -> int:
    """A Python twin of the compiled plausibility count (agents.search._search_kernels.implausibility),
    written with the greedy bot's own functions."""
    hand = state.hands[opp] & ~state.chosen
    meld, my_meld, my_size = state.melds[opp], state.melds[1 - opp], state.hands[1 - opp].bit_count()
    unseen = FULL_MASK & ~(hand | state.melds[0] | state.melds[1] | state.dead)
    bad = 0
    for card in cards_of(state.refusals[opp]):
        bit = 1 << card
        if not can_split_into_melds(meld | bit) and NEIGHBOURS[card] & hand and can_extend_to_meld(meld | bit, hand):
            bad += 1
    for card in cards_of(state.discards[opp]):
        if any(pm & hand == pm for pm in PARTNERS[card]):
            bad += 1
    if state.face_up >= 0 and state.source == DISCARDED and state.owner == opp:
        held = hand | 1 << state.face_up
        if choose_discard(held, meld, unseen & ~(1 << state.face_up), my_meld, my_size)[0] != state.face_up:
            bad += K.LATEST_DISCARD_WEIGHT
    return bad


def test_the_compiled_inference_equals_its_python_twin():
    """The compiled plausibility count equals the Python twin above on the same deals (and
    rules deals out in these positions)."""
    rng = random.Random(3)
    info = np.zeros(K.INFO_SIZE, dtype=np.int64)
    info[K.I_RNG] = 99
    out = np.empty(E.NUM_COLUMNS, dtype=np.int64)
    scratch = np.empty(E.NUM_COLUMNS, dtype=np.int64)
    counted = latest = 0
    for state in _positions(60, seed=300):
        view = PlayerView(state, state.player)
        row, pool, n_opp = view_row(view)
        opp = 1 - state.player
        latest += state.face_up >= 0 and state.source == DISCARDED and state.owner == opp
        for _ in range(10):
            python_deal = view.determinize(rng)
            compiled_row = row.copy()
            compiled_row[E.H0 + opp] = python_deal.hands[opp]
            assert K.implausibility(compiled_row, opp) == _python_implausibility(python_deal, opp)
            K.determinize(row, pool, None, n_opp, 1, info, out, scratch)
            counted += K.implausibility(out, opp) > 0
    assert counted > 0 and latest > 0


def test_plausible_deals_contradict_less():
    state = next(s for s in _positions(60, seed=500) if s.refusals[1 - s.player] and s.discards[1 - s.player])
    row, pool, n_opp = view_row(PlayerView(state, state.player))
    opp = 1 - state.player
    info = np.zeros(K.INFO_SIZE, dtype=np.int64)
    info[K.I_RNG] = 7
    out = np.empty(E.NUM_COLUMNS, dtype=np.int64)
    scratch = np.empty(E.NUM_COLUMNS, dtype=np.int64)
    means = []
    for tries in (1, 10):
        bad = []
        for _ in range(400):
            K.determinize(row, pool, None, n_opp, tries, info, out, scratch)
            bad.append(K.implausibility(out, opp))
        means.append(np.mean(bad))
    assert means[1] <= means[0]


# ------------------------------------------------------------------ stacked end games


def _end_game(hand0: str, meld0: str, hand1: str, meld1: str, face: str | None, phase: int):
    """Player 0 to decide in a position built card by card; the other cards are dead or in
    a six-card stock."""
    state = new_game(seed=0)
    h0, m0, h1, m1 = (mask_of(x) if x else 0 for x in (hand0, meld0, hand1, meld1))
    used = h0 | m0 | h1 | m1 | (1 << parse_card(face) if face else 0)
    rest = cards_of(FULL_MASK & ~used)
    stock = rest[-6:]
    dead = mask_of_cards(rest[:-6])
    state.hands, state.melds = [h0, h1], [m0, m1]
    state.dead = dead
    state.stock = tuple((cards_of(used) * 14)[:14]) + tuple(stock)  # the turned cards: never read
    assert len(state.stock) == 20
    state.stock_pos = 14
    state.face_up = parse_card(face) if face else -1
    state.source, state.owner, state.passed = TURNED, 0, False
    state.player, state.phase = 0, phase
    state.move_count = 40
    state._mask = -1  # test surgery: the legal mask is recomputed
    return state


def test_the_search_takes_the_card_that_goes_out():
    # 8 cards melded, 5S 6S in hand: the turned 7S makes eleven melded cards
    state = _end_game("5S 6S", "AC 2C 3C 4C AD 2D 3D 4D", "KH QH JH 7H 6H 5H 4H 3H 2H AH", "", "7S", OFFER)
    bot = PIMCAgent(iterations=200, seed=1)
    bot.reset(0, seed=1)
    assert act(bot, state) == TAKE
    playouts, value = bot.last_stats[TAKE]
    assert value == 1.0 and playouts > 0


def test_the_search_values_a_losing_discard_at_zero_and_avoids_it():
    # the opponent has ten cards melded and none in hand: 6S or 6H fits their meld and wins
    meld1 = "AS 2S 3S 4S 5S AH 2H 3H 4H 5H"
    state = _end_game("6S KC 7D", "JC QC KD QD JD 7C 6C 5C", "", meld1, None, DISCARD)
    assert can_split_into_melds(mask_of(meld1 + " 6S"))
    bot = PIMCAgent(iterations=600, z=0, seed=2)
    bot.reset(0, seed=2)
    action = act(bot, state)
    losing = DISCARD_BASE + parse_card("6S")
    assert bot.last_stats[losing] == (bot.last_stats[losing][0], 0.0)
    assert action != losing
    values, counts, chosen = analyze([PlayerView(state, 0)], iterations=300, seed=4)
    assert values[0, losing] == 0.0 and counts[0, losing] > 0 and chosen[0] != losing


# ------------------------------------------------------------------ no peeking, determinism, legality


@pytest.mark.parametrize("seed,moves", [(11, 0), (12, 8), (13, 20), (14, 30)])
def test_decisions_ignore_the_hidden_cards(seed, moves):
    state = mid_game_state(seed, moves)
    rng = random.Random(seed)
    outcomes = []
    for trial in range(4):
        variant = state if trial == 0 else permute_hidden(state, rng)
        if trial:
            assert variant.hands[1 - state.player] != state.hands[1 - state.player]
        bot = PIMCAgent(iterations=300, seed=5)
        bot.reset(state.player, seed=99)
        outcomes.append((act(bot, variant), bot.last_iterations, bot.last_stats))
    assert outcomes[0][1] >= 2
    assert all(o == outcomes[0] for o in outcomes), outcomes


def test_the_permutation_check_catches_a_peeking_search(monkeypatch):
    real_view_row = search_module.view_row

    def peeking_view_row(view):
        row, pool, n_opp = real_view_row(view)
        state = view._state
        opp = 1 - view.player
        # the true hidden hand first in the pool, and no shuffle: deal the real cards
        hidden = cards_of(state.hands[opp] & ~state.chosen)
        pool = np.array(hidden + list(state.stock[state.stock_pos :]), dtype=np.int64)
        return row, pool, n_opp

    monkeypatch.setattr(search_module, "view_row", peeking_view_row)
    stats = stats_under_permutations(lambda: PIMCAgent(iterations=300, seed=5), mid_game_state(13, 20), seed=13)
    assert any(s != stats[0] for s in stats[1:])


def test_the_search_is_deterministic_under_a_seed():
    from conquian_arena.match import deal_for_seed, play_game

    hands, stock = deal_for_seed(21)
    runs = [
        play_game([PIMCAgent(iterations=150, seed=8), GreedyAgent()], hands=hands, stock=stock, seed=3).actions
        for _ in range(2)
    ]
    assert runs[0] == runs[1]


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_the_search_never_plays_an_illegal_action(rules):
    bot = PIMCAgent(iterations=60, seed=1)
    records = duplicate(bot, RandomAgent(seed=4), deals=30, rules=rules)
    records += duplicate(bot, GreedyAgent(), deals=30, rules=rules, offset=100)
    records += duplicate(PIMCAgent(iterations=40, z=0, tries=1, seed=3), bot, deals=15, rules=rules, offset=300)
    assert all(r.failure is None for _, r in records), [r.failure for _, r in records if r.failure]
    assert all(r.replay()[-1].is_terminal() for _, r in records)


def test_single_choices_are_answered_without_search():
    state = _end_game("AC 3C", "", "KH QH JH 7H 6H 5H 4H 3H 2H AH", "", "KS", OFFER)
    bot = PIMCAgent(iterations=10_000, seed=1)
    assert act(bot, state) == E.REFUSE
    assert bot.last_iterations == 0


def test_the_time_budget_is_kept(monkeypatch):
    """On a clock that moves only while playouts run (a deal takes 0.1-0.3 ms, drawn at
    random: the pace varies), every decision ends within its budget and uses most of it.
    (Wall-clock time on a shared machine depends on the scheduler: benchmarks/bench_search.py
    measures it; the last check here is a loose one on the real clock.)"""
    clock = [0.0]
    pace = np.random.default_rng(0)
    real_run = K.run_search

    def timed_run(search, results, deals):
        clock[0] += sum(pace.uniform(1e-4, 3e-4) for _ in range(deals))
        return real_run(search, results, deals)

    monkeypatch.setattr(search_module.K, "run_search", timed_run)
    monkeypatch.setattr(search_module._time, "perf_counter", lambda: clock[0])
    for budget in (0.005, 0.02, 0.05):
        bot = PIMCAgent(time=budget, z=0, seed=3)
        bot.reset(0, seed=3)
        for state in _positions(8, seed=40):
            started = clock[0]
            act(bot, state)
            spent = clock[0] - started
            assert bot.last_iterations > 0
            assert spent <= budget, (budget, spent)
            assert spent >= 0.5 * budget, (budget, spent)
    monkeypatch.undo()
    bot = PIMCAgent(time=0.02, z=0, seed=3)
    bot.reset(0, seed=3)
    started = time.perf_counter()
    act(bot, _positions(1, seed=40)[0])
    assert time.perf_counter() - started < 0.02 + 0.5


# ------------------------------------------------------------------ the analysis call


def test_analyze_values_every_legal_action():
    states = _positions(10, seed=60)
    views = [PlayerView(s, s.player) for s in states]
    values, counts, chosen = analyze(views, iterations=400, seed=9)
    assert values.shape == counts.shape == (len(views), NUM_ACTIONS)
    for b, view in enumerate(views):
        legal = set(view.legal_actions())
        searched = {a for a in range(NUM_ACTIONS) if counts[b, a] > 0}
        assert searched == legal  # z=0: every legal action on every deal
        assert len({int(counts[b, a]) for a in legal}) == 1
        assert np.isnan(values[b, [a for a in range(NUM_ACTIONS) if a not in legal]]).all()
        assert ((values[b, list(legal)] >= 0) & (values[b, list(legal)] <= 1)).all()
        assert chosen[b] in legal
    again = analyze(views, iterations=400, seed=9)
    np.testing.assert_array_equal(again[0], values)
    np.testing.assert_array_equal(again[2], chosen)


def test_analyze_rejects_a_view_without_a_decision():
    state = mid_game_state(11, 0)
    with pytest.raises(ValueError, match=r"views\[0\]: the player .* no decision"):
        analyze([PlayerView(state, 1 - state.player)])


# ------------------------------------------------------------------ specs and errors


def test_specs_build_the_compiled_and_the_python_search():
    from agents.search.ismcts import ISMCTSAgent

    bot = make_agent("pimc", seed=3)
    assert isinstance(bot, PIMCAgent) and bot.time == 0.15 and bot.iterations is None
    bot = make_agent("pimc:iterations=800,z=2,tries=4", seed=3)
    assert (bot.iterations, bot.time, bot.z, bot.tries) == (800, None, 2.0, 4)
    assert isinstance(make_agent("ismcts-py:iterations=20"), ISMCTSAgent)
    for bad, field in [
        ("pimc:iterations=0", "iterations"),
        ("pimc:time=-1", "time"),
        ("pimc:z=-1", "z"),
        ("pimc:tries=0", "tries"),
        ("pimc:tries=1.5", "tries"),
        ("pimc:rollout=random", "unknown parameter"),
    ]:
        with pytest.raises(SpecError, match=field):
            make_agent(bad)


def test_without_numba_the_error_names_the_fast_extra(monkeypatch):
    monkeypatch.setattr(search_module, "K", None)
    missing = ModuleNotFoundError("No module named 'numba'", name="numba")  # as `import numba` raises it
    monkeypatch.setattr(search_module, "_IMPORT_ERROR", missing, raising=False)
    with pytest.raises(ImportError, match=r"conquian-env\[fast\].*ismcts-py"):
        PIMCAgent()


# ------------------------------------------------------------------ searched decisions


def _searched(count: int, seed: int):
    """Decisions of greedy self-play that the search searches (not a meld) with three or more legal actions."""
    greedy, out = GreedyAgent(), []
    for s in range(seed, seed + 100):
        state = new_game(seed=s)
        while not state.is_terminal() and len(out) < count:
            if state.phase != MELD and bin(state.legal_action_mask()).count("1") >= 3:
                out.append(state.clone())
            state.apply(greedy.choose(PlayerView(state, state.player)))
        if len(out) == count:
            break
    return out[:count]


def test_analyze_with_a_race_ends_where_the_race_is_won():
    """With z > 0 the playouts go to the actions in doubt: every legal action still gets a
    value, a search whose race is won stops before its cap, and the choice is the race's winner."""
    states = _positions(10, seed=60)
    views = [PlayerView(s, s.player) for s in states]
    cap = 6000
    values, counts, chosen = analyze(views, iterations=cap, z=3.0, seed=9)
    totals = counts.sum(axis=1)
    assert (totals <= cap + NUM_ACTIONS).all() and (totals < cap).any()
    for b, view in enumerate(views):
        legal = view.legal_actions()
        assert (counts[b, legal] > 0).all() and not np.isnan(values[b, legal]).any()
        if totals[b] < cap:  # won: the winner is ahead of every other action
            assert all(values[b, chosen[b]] >= values[b, a] for a in legal)


def test_the_strength_benchmark_plays_the_search_against_greedy_only(tmp_path, capsys):
    """benchmarks/bench_search.py --strength: each budget's games are the search against greedy
    (it once played a copy of itself as well, and printed that pair's 0.5)."""
    import argparse
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_search.py"
    spec = importlib.util.spec_from_file_location("bench_search", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.strength(argparse.Namespace(strength="2", games=4, seed=3, jobs=1, out=str(tmp_path)))
    (folder,) = tmp_path.iterdir()
    games = [json.loads(line) for line in (folder / "games.jsonl").read_text().splitlines()]
    assert len(games) == 4 and all(sorted(g["pair"]) == ["greedy", "pimc:time=0.002"] for g in games)
    assert "   4 " in capsys.readouterr().out


# ------------------------------------------------------------------ the scorer compiled


def _random_rows(n: int, seed: int, forcing: bool = False):
    """Engine rows after 0..40 random moves each (a spread of phases and positions)."""
    games = VectorGame(n, observations=False, parallel=False, seed=seed, forcing=forcing)
    rng = np.random.default_rng(seed)
    for i in range(n):
        for _ in range(rng.integers(0, 40)):
            if games.state[i, E.PHASE] == E.GAME_OVER:
                break
            E.apply(games.state, i, E.random_legal(games.state, i, rng.random()))
    return games


def _pooled_scorer(seed=0):
    """A random deep-sets scorer (176 -> 24, pooled [h, mean, max] -> 16 -> 1)."""
    from agents.scorer.scorer import CANDIDATE_SIZE, ActionScorer

    rng = np.random.default_rng(seed)
    shapes = [(CANDIDATE_SIZE, 24), (72, 16), (16, 1)]
    return ActionScorer([(rng.normal(0, 0.3, s).astype(np.float32), rng.normal(0, 0.1, s[1]).astype(np.float32))
                         for s in shapes], pool_after=0)  # fmt: skip


@pytest.mark.parametrize("which", ["shipped", "pooled"])
def test_the_compiled_scorer_is_the_scorer_bot(which):
    """Candidates equal agents.scorer.scorer.candidate_features' exactly, scores to float rounding,
    and the compiled move is the move of the scorer's numpy forward pass, greedy's elsewhere;
    the shipped network and a deep-sets one (each candidate's score pooled over the others)."""
    from agents.greedy.greedy_kernels import batch_features
    from agents.scorer.scorer import DEFAULT_SCORER, candidate_features, load_scorer

    scorer = load_scorer(DEFAULT_SCORER) if which == "shipped" else _pooled_scorer()
    weights, dims, inputs, f, x, acts, out, h, g = SK.network(scorer)
    games = _random_rows(800, seed=21)
    rows = np.flatnonzero(games.state[:, E.PHASE] != E.GAME_OVER)
    players = games.state[rows, E.PLAYER]
    features = batch_features(games, rows, players)
    _, masks = games.observe_rows(rows, players, masks_only=True)
    ref_x, valid, ref_actions = candidate_features(features, masks)
    scored = 0
    for k, r in enumerate(rows):
        S = games.state
        n = SK.candidates(features[k], S[r, E.PHASE], S[r, E.LCARDS], S[r, E.LMISC], x, acts)
        assert n == valid[k].sum()
        np.testing.assert_array_equal(x[:n], ref_x[k, :n])
        np.testing.assert_array_equal(acts[:n], ref_actions[k, :n])
        move = SK.scorer_action(S, r, weights, dims, inputs, f, x, acts, out, h, g)
        if S[r, E.PHASE] in (OFFER, DISCARD) and masks[k].sum() >= 2:
            ref = scorer(ref_x[k, :n])
            np.testing.assert_allclose(out[:n], ref, rtol=0, atol=1e-4)
            assert move == ref_actions[k, int(np.argmax(ref))]
            scored += 1
        else:
            assert move == K.greedy_action(S, r)
    assert scored >= 150


def test_a_search_bots_first_game_compiles_every_signature_its_decisions_use():
    """The warm-up (at the bot's first reset, when every knob is set) calls the kernels exactly as
    the bots do (the search's record built by the same method): numba compiles every argument type
    apart (once, an omitted optional argument and an explicit None were two signatures, and a
    warm-up that omitted one left a bot's first decision to compile: 4.8 s against a 0.02 s
    budget). Counted in a fresh process."""
    import subprocess
    import sys
    from pathlib import Path

    code = """
import sys
from agents.search import _search_kernels as K
from agents import make_agent
from tests.conftest import act
from tests.test_search import _searched
for spec in sys.argv[1:]:
    bot = make_agent(spec, seed=1)
    states = _searched(3, seed=91)
    bot.reset(states[0].player, seed=1)
    before = len(K.run_search.signatures) + len(K.new_search.signatures)
    for state in states:
        bot.reset(state.player, seed=1)
        act(bot, state)
    print(spec, before, len(K.run_search.signatures) + len(K.new_search.signatures))
"""
    specs = ["pimc:iterations=20", "search:iterations=20", "search:iterations=20,uniform=true"]
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", code, *specs], capture_output=True, text=True, cwd=root, timeout=600,
        env={**__import__("os").environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    for line in done.stdout.strip().splitlines():
        spec, before, after = line.rsplit(" ", 2)
        assert before == after, f"{spec}: its first decisions compiled {int(after) - int(before)} new signature(s)"
