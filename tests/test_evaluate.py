"""Tests of tournaments (evaluate.py, conquian_arena.tournament): statistics against scipy, scheduling,
reproducibility, resume, failures, Ctrl-C."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, stats

import evaluate
from agents.base import Agent
from agents.registry import SpecError
from conquian_arena import game_lines, runfiles, schedule, tournament
from conquian_arena.game_lines import ResumeWarning
from conquian_arena.match import deal_for_seed
from conquian_arena.record import GameRecord, RecordedGame, replay_states
from conquian_arena.report import format_summary
from conquian_arena.stats import (
    ELO_PER_LOGIT,
    bootstrap_ratings,
    bradley_terry,
    normal_quantile,
    score_interval,
    stake_results,
    t_interval,
    t_quantile,
)
from conquian_arena.tournament import TournamentConfig, run_tournament
from conquian_env.rules import FORCING, STANDARD, rules_of_record

# --------------------------------------------------------------------------- tiny test bots

HERE = "python:tests.test_evaluate"


class FirstLegalBot(Agent):
    """Lowest legal id: takes whenever it can, melds every card it can, discards its lowest card."""

    name = "first"

    def act(self, observation, action_mask, view):
        return int(np.flatnonzero(action_mask)[0])


class LastLegalBot(Agent):
    """Highest legal id: refuses whenever it can, finishes melds at once."""

    name = "last"

    def act(self, observation, action_mask, view):
        return int(np.flatnonzero(action_mask)[-1])


class CrashBot(Agent):
    name = "crash"

    def act(self, observation, action_mask, view):
        raise RuntimeError("boom")


class IllegalBot(Agent):
    name = "illegal"

    def act(self, observation, action_mask, view):
        return int(np.flatnonzero(action_mask == 0)[0])


FIRST, LAST, CRASH, ILLEGAL = (f"{HERE}:{c}" for c in ("FirstLegalBot", "LastLegalBot", "CrashBot", "IllegalBot"))
# bots are labelled by their short name (the class name for python: specs)
QUICK = {"bootstrap": 50, "plot": False, "progress": False}  # keep tests fast


def read_games(out: Path) -> list[dict]:
    games = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    return sorted(games, key=lambda g: g["index"])


def without_timing(games: list[dict]) -> list[dict]:
    return [{k: v for k, v in g.items() if k not in ("think_time", "max_think", "check")} for g in games]


_CHECK = re.compile(r', "check": "[0-9a-f]{64}"')


def signed_as_the_run(out: Path, text: str) -> str:
    """``text`` (a games.jsonl line) with its check, if any, replaced by one made with ``out``'s key:
    a line edited by someone who holds the run's key file, so that the deeper checks are what is tested."""
    text = _CHECK.sub("", text)
    if not (text.startswith("{") and text.endswith("}")):
        return text
    return runfiles.sign_line(text, runfiles.read_key(out))


def stable(summary: dict) -> dict:
    """The reproducible part of a summary (thinking time and folder name differ)."""
    return {k: v for k, v in summary.items() if k not in ("timing", "out_dir")}


# --------------------------------------------------------------------------- statistics vs scipy


def test_t_interval_matches_scipy():
    x = np.random.default_rng(1).choice([0.0, 0.25, 0.5, 0.75, 1.0], size=37)
    mean, low, high = t_interval(x, 0.95)
    ref = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert mean == pytest.approx(x.mean())
    assert (low, high) == pytest.approx(ref, rel=1e-12)
    iv = score_interval(x, 0.9, "deals")
    assert (iv.low, iv.high) == pytest.approx(stats.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=stats.sem(x)))
    assert "Student t" in iv.method and "37 deals" in iv.method


def test_quantiles_without_scipy_equal_scipys():
    # the tournament's intervals need no scipy (a plain install): its own quantiles give scipy's numbers
    dfs = [*range(1, 120), 199, 499, 1000, 4999, 20000, 2.5, 0.5, 7.25]
    ps = [0.55, 0.75, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.9995, 1 - 1e-8, 0.3, 0.1, 0.025, 0.005]
    for df in dfs:
        for p in ps:
            assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-12, abs=0), (p, df)
    for p in [*np.linspace(1e-6, 1 - 1e-6, 2001), 1e-300, 1e-20, 0.025, 0.975]:
        assert normal_quantile(p) == pytest.approx(stats.norm.ppf(p), rel=0, abs=2e-15), p
    assert t_quantile(0.5, 9) == 0.0 and normal_quantile(0.5) == 0.0
    assert (t_quantile(1.0, 3), t_quantile(0.0, 3), normal_quantile(1.0)) == (math.inf, -math.inf, math.inf)
    for bad in ((1.5, 3), (-0.1, 3), (0.9, 0), (0.9, -2), (math.nan, 3)):
        with pytest.raises(ValueError, match="probability|degrees of freedom"):
            t_quantile(*bad)


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_score_interval_all_or_nothing_is_wilson_as_scipy(value):
    n = 40
    iv = score_interval(np.full(n, value), 0.95, "deals")
    ref = stats.binomtest(int(value * n), n).proportion_ci(0.95, method="wilson")
    assert iv.estimate == value
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high), rel=1e-12)
    assert "Wilson" in iv.method


def test_score_interval_is_clipped_to_unit_range():
    iv = score_interval([1.0, 1.0, 1.0, 0.5], 0.95)
    assert 0.0 <= iv.low <= iv.estimate <= iv.high == 1.0


def test_stake_doubling_on_hand_made_match():
    # draw, draw, A wins (stake 4), A loses (stake back to 1), draw, A wins (stake 2)
    res = stake_results([0, 0, 1, -1, 0, 1])
    assert res["stakes"] == [1, 2, 4, 1, 1, 2]
    assert res["winnings"] == [0, 0, 4, -1, 0, 2]
    assert res["total"] == 5 and res["mean"] == pytest.approx(5 / 6)
    assert res["max_stake"] == 4 and res["cycles"] == 3
    # trailing draws form the last (open) cycle; they win nothing
    res = stake_results([1, 0, 0])
    assert res["stakes"] == [1, 1, 2] and res["winnings"] == [1, 0, 0] and res["cycles"] == 2
    with pytest.raises(ValueError, match="draw"):
        stake_results([2])


def test_stake_interval_without_draws_is_the_t_interval():
    outcomes = np.random.default_rng(3).choice([-1, 1], size=60, p=[0.4, 0.6])
    res = stake_results(outcomes)
    ref = stats.t.interval(0.95, 59, loc=outcomes.mean(), scale=stats.sem(outcomes))
    assert res["mean"] == pytest.approx(outcomes.mean())
    assert (res["low"], res["high"]) == pytest.approx(ref)


def test_stake_interval_regenerative_delta_method():
    outcomes = [0, 1, -1, 0, 0, -1, 1, 1, 0, 1, -1, 1]
    res = stake_results(outcomes)
    cycles = [(1 * 2, 2), (-1, 1), (-4, 3), (1, 1), (1, 1), (2, 2), (-1, 1), (1, 1)]
    w = np.array([c[0] for c in cycles], float)
    n = np.array([c[1] for c in cycles], float)
    ratio = w.sum() / n.sum()
    se = np.sqrt(np.sum((w - ratio * n) ** 2) / (len(w) - 1) / len(w)) / n.mean()
    assert res["mean"] == pytest.approx(ratio)
    assert res["high"] - res["mean"] == pytest.approx(stats.t.ppf(0.975, len(w) - 1) * se)


def test_stakes_survive_very_long_draw_runs():
    res = stake_results([0] * 1100 + [1, 0])
    assert res["mean"] == math.inf and math.isnan(res["low"])


def test_bradley_terry_symmetric_results_give_equal_ratings():
    wins = np.array([[0, 5, 7], [5, 0, 7], [7, 7, 0]], float)
    assert bradley_terry(wins) == pytest.approx(np.zeros(3), abs=1e-9)


def test_bradley_terry_two_bots_is_the_log_odds():
    r = bradley_terry([[0, 30], [10, 0]])
    assert r[0] - r[1] == pytest.approx(math.log(3))
    assert r.sum() == pytest.approx(0)
    assert bradley_terry([[0, 30], [10, 0]], anchor=1)[1] == 0


def test_bradley_terry_dominance_order_and_scipy_optimum():
    wins = np.array([[0, 8, 9, 10], [2, 0, 7, 8], [1, 3, 0, 6], [0.5, 2, 4, 0]])
    r = bradley_terry(wins)
    assert list(np.argsort(-r)) == [0, 1, 2, 3]

    def neg_loglik(free):
        s = np.concatenate([[0.0], free])
        return -np.sum(wins * -np.logaddexp(0, -(s[:, None] - s[None, :])))

    ref = optimize.minimize(neg_loglik, np.zeros(3), method="BFGS", options={"gtol": 1e-10}).x
    ref = np.concatenate([[0.0], ref])
    assert r == pytest.approx(ref - ref.mean(), abs=1e-5)


def test_bradley_terry_unbeaten_bot_needs_the_prior():
    wins = [[0, 10], [0, 0]]
    with pytest.raises(ValueError, match="no finite"):
        bradley_terry(wins)
    r = bradley_terry(wins, prior_draws=1.0)  # 10.5 : 0.5
    assert (r[0] - r[1]) == pytest.approx(math.log(21))


def test_bootstrap_ratings_match_scipy_bootstrap_for_two_bots():
    rng = np.random.default_rng(5)
    deal_scores = rng.choice([0.0, 0.5, 1.0, 1.5, 2.0], size=300, p=[0.15, 0.2, 0.25, 0.2, 0.2])
    unit_wins = np.zeros((300, 2, 2))
    unit_wins[:, 0, 1] = deal_scores
    unit_wins[:, 1, 0] = 2.0 - deal_scores
    low, high, failed = bootstrap_ratings(unit_wins, 3000, 0.0, None, 0.95, seed=0)
    assert failed == 0

    def elo_of_a(x, axis=-1):  # two bots, mean 0: A is half the log-odds of its score
        s = np.mean(x, axis=axis) / 2
        return ELO_PER_LOGIT * np.log(s / (1 - s)) / 2

    ref = stats.bootstrap((deal_scores,), elo_of_a, n_resamples=3000, method="percentile", random_state=1)
    width = ref.confidence_interval.high - ref.confidence_interval.low
    assert low[0] == pytest.approx(ref.confidence_interval.low, abs=0.1 * width)
    assert high[0] == pytest.approx(ref.confidence_interval.high, abs=0.1 * width)
    assert low[1] == pytest.approx(-high[0]) and high[1] == pytest.approx(-low[0])


# --------------------------------------------------------------------------- schedule


def test_duplicate_deals_swap_seats_with_identical_deal(tmp_path):
    run_tournament(["random", FIRST, LAST], games=7, seed=11, out=tmp_path, jobs=1, **QUICK)
    games = read_games(tmp_path)
    assert len(games) == 3 * 8  # 7 rounded up to 8 per pair
    by_deal = {}
    for g in games:
        by_deal.setdefault((tuple(g["pair"]), g["deal"]), []).append(g)
        assert g["first"] == 0 and g["rules"] == {"forcing": False}
        assert [g["hands"], g["stock"]] == list(deal_for_seed(g["deal_seed"]))
    assert len(by_deal) == 3 * 4
    for (pair, _), (g0, g1) in by_deal.items():
        assert (g0["swap"], g1["swap"]) == (0, 1)
        assert g0["seats"] == list(pair) and g1["seats"] == list(reversed(pair))
        assert g0["hands"] == g1["hands"] and g0["stock"] == g1["stock"]
    # every line is a replayable record whose result is the one reported
    for g in games:
        final = GameRecord.from_dict(g).replay()[-1]
        assert g["winner"] == (final.winner if final.winner >= 0 else None)
        assert g["winner_label"] == (None if g["winner"] is None else g["seats"][g["winner"]])
    # the same deals for every pair (common random numbers)
    for d in range(4):
        assert len({g["deal_seed"] for g in games if g["deal"] == d}) == 1


def test_no_duplicate_gives_fresh_deals_and_alternating_seats(tmp_path):
    summary = run_tournament(["random", FIRST], games=5, seed=2, out=tmp_path, jobs=1, duplicate=False, **QUICK)
    games = read_games(tmp_path)
    assert [g["deal"] for g in games] == [0, 1, 2, 3, 4]
    assert len({json.dumps(g["hands"]) for g in games}) == 5
    assert [g["swap"] for g in games] == [0, 1, 0, 1, 0]
    assert summary["pairs"][0]["units"] == 5 and "5 games" in summary["pairs"][0]["score_method"]


def test_gauntlet_plays_only_against_the_field(tmp_path):
    summary = run_tournament(["random", FIRST], games=2, gauntlet=LAST, out=tmp_path, jobs=1, **QUICK)
    assert [(p["a"], p["b"]) for p in summary["pairs"]] == [
        ("LastLegalBot", "random"),
        ("LastLegalBot", "FirstLegalBot"),
    ]
    assert [r["spec"] for r in summary["ratings"]] == [LAST, "random", FIRST]


def test_repeated_spec_gets_distinct_labels(tmp_path):
    summary = run_tournament(["random", "random"], games=4, out=tmp_path, jobs=1, **QUICK)
    assert [r["bot"] for r in summary["ratings"]] == ["random", "random#2"]


# --------------------------------------------------------------------------- reproducibility and resume


def test_same_seed_same_tournament_and_other_seed_differs(tmp_path):
    specs = ["random", FIRST, LAST]
    s1 = run_tournament(specs, games=6, seed=4, out=tmp_path / "a", jobs=1, **QUICK)
    s2 = run_tournament(specs, games=6, seed=4, out=tmp_path / "b", jobs=1, **QUICK)
    assert stable(s1) == stable(s2)
    assert without_timing(read_games(tmp_path / "a")) == without_timing(read_games(tmp_path / "b"))
    run_tournament(specs, games=6, seed=5, out=tmp_path / "c", jobs=1, **QUICK)
    assert [g["hands"] for g in read_games(tmp_path / "a")] != [g["hands"] for g in read_games(tmp_path / "c")]


def test_parallel_run_equals_serial_run(tmp_path):
    specs = ["random", "random", FIRST]
    s1 = run_tournament(specs, games=10, seed=8, out=tmp_path / "j1", jobs=1, **QUICK)
    s2 = run_tournament(specs, games=10, seed=8, out=tmp_path / "j2", jobs=2, **QUICK)
    assert stable(s1) == stable(s2)
    assert without_timing(read_games(tmp_path / "j1")) == without_timing(read_games(tmp_path / "j2"))


def test_resume_skips_played_games_and_replays_corrupt_lines(tmp_path, monkeypatch):
    specs = ["random", FIRST]
    reference = run_tournament(specs, games=12, seed=3, out=tmp_path / "ref", jobs=1, **QUICK)
    out = tmp_path / "cut"
    run_tournament(specs, games=12, seed=3, out=out, jobs=1, **QUICK)
    path = out / "games.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    # delete two lines, garble one, and leave the last one half-written (killed mid-write)
    kept = lines[:2] + lines[4:6] + ["{not json\n"] + lines[7:-1] + [lines[-1][: len(lines[-1]) // 2]]
    path.write_text("".join(kept))

    played = []
    real_play = tournament.play_task
    monkeypatch.setattr(tournament, "play_task", lambda task: played.append(task.index) or real_play(task))
    with pytest.warns(ResumeWarning) as record:
        resumed = run_tournament(specs, games=12, seed=3, out=out, jobs=1, **QUICK)
    messages = sorted(str(w.message) for w in record)
    assert len(messages) == 2
    assert "line 10 is corrupt or half-written" in messages[0]  # the half-written last line
    assert "line 5 is corrupt or half-written" in messages[1]  # the garbled line
    assert sorted(played) == [2, 3, 6, 11]
    assert stable(resumed) == stable(reference)
    assert without_timing(read_games(out)) == without_timing(read_games(tmp_path / "ref"))
    assert "{not json" in (out / "games.rejected.txt").read_text()

    # a finished tournament re-run plays nothing and warns about nothing
    played.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResumeWarning)
        again = run_tournament(specs, games=12, seed=3, out=out, jobs=1, **QUICK)
    assert played == [] and stable(again) == stable(reference)


def test_resume_replays_every_line_and_sets_tampered_ones_aside(tmp_path, monkeypatch):
    # before: well-formed lines were trusted: an edited result, swapped seats or an inserted
    # illegal action were counted, and a line missing a field crashed the summary
    specs = ["random", "greedy"]
    reference = run_tournament(specs, games=10, seed=4, out=tmp_path / "ref", jobs=1, **QUICK)
    out = tmp_path / "t"
    run_tournament(specs, games=10, seed=4, out=out, jobs=1, **QUICK)
    path = out / "games.jsonl"
    objs = [json.loads(line) for line in path.read_text().splitlines()]
    decided = next(i for i, o in enumerate(objs) if o["winner"] is not None)
    objs[decided]["winner"] = 1 - objs[decided]["winner"]  # an edited result
    objs[decided]["winner_label"] = objs[decided]["seats"][objs[decided]["winner"]]
    objs[1]["seats"] = objs[1]["seats"][::-1]  # swapped seats
    objs[2]["actions"].insert(3, "discard KS")  # an inserted action
    del objs[3]["think_time"]  # a missing field
    tampered = {decided, 1, 2, 3}
    path.write_text("".join(signed_as_the_run(out, json.dumps(o)) + "\n" for o in objs))
    played = []
    real_play = tournament.play_task
    monkeypatch.setattr(tournament, "play_task", lambda task: played.append(task.index) or real_play(task))
    with pytest.warns(ResumeWarning) as record:
        resumed = run_tournament(specs, games=10, seed=4, out=out, jobs=1, **QUICK)
    assert len(record) == len(tampered)
    assert sorted(played) == sorted(objs[i]["index"] for i in tampered)
    assert stable(resumed) == stable(reference)
    assert without_timing(read_games(out)) == without_timing(read_games(tmp_path / "ref"))
    assert len((out / "games.rejected.txt").read_text().splitlines()) == len(tampered)


def test_resume_with_other_config_is_a_clear_error(tmp_path):
    run_tournament(["random", FIRST], games=4, seed=1, out=tmp_path, jobs=1, **QUICK)
    with pytest.raises(ValueError, match=r"different tournament \(games: folder has 4, this run asks 6.*--out"):
        run_tournament(["random", FIRST], games=6, seed=1, out=tmp_path, jobs=1, **QUICK)
    with pytest.raises(ValueError, match="forcing"):
        run_tournament(["random", FIRST], games=4, seed=1, out=tmp_path, jobs=1, rules=FORCING, **QUICK)
    run_tournament(["random", FIRST], games=3, seed=1, out=tmp_path, jobs=1, **QUICK)  # 3 rounds up to 4


# --------------------------------------------------------------------------- failures and errors


@pytest.mark.parametrize("bad", ["nosuchbot", "random:speed=3", f"{HERE}:NoSuchClass", "python:tests.nope:X"])
def test_bad_spec_fails_fast_with_registry_error(tmp_path, bad):
    out = tmp_path / "never"
    with pytest.raises(SpecError) as err:
        run_tournament(["random", bad], games=2, out=out, jobs=2, **QUICK)
    assert bad in str(err.value)
    assert not out.exists()


def test_bad_spec_on_the_command_line_lists_known_bots(capsys, tmp_path):
    assert evaluate.main(["random", "nosuchbot", "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "unknown bot 'nosuchbot'" in err and "known bots" in err and "pimc" in err


def test_crashing_and_illegal_bots_lose_and_are_counted(tmp_path):
    summary = run_tournament(["random", CRASH, ILLEGAL], games=4, out=tmp_path, jobs=1, **QUICK)
    ratings = {r["bot"]: r for r in summary["ratings"]}
    # the bot in seat 0 decides first, so between the two broken bots each fails when it sits first
    assert (ratings["CrashBot"]["crash"], ratings["CrashBot"]["illegal"]) == (6, 0)
    assert (ratings["IllegalBot"]["crash"], ratings["IllegalBot"]["illegal"]) == (0, 6)
    assert ratings["random"]["crash"] == ratings["random"]["illegal"] == 0
    assert ratings["random"]["score"] == 1.0
    assert "boom" in ratings["CrashBot"]["example_failure"]["message"]
    pairs = {(p["a"], p["b"]): p for p in summary["pairs"]}
    assert (
        pairs["random", "CrashBot"]["wins"] == 4 and pairs["random", "CrashBot"]["failures"]["CrashBot"]["crash"] == 4
    )
    assert (
        pairs["CrashBot", "IllegalBot"]["wins"] == 2
        and pairs["CrashBot", "IllegalBot"]["failures"]["IllegalBot"]["illegal"] == 2
    )
    assert pairs["random", "CrashBot"]["decided_win_rate"] == 1.0  # 4 wins, 0 losses
    assert pairs["CrashBot", "IllegalBot"]["decided_win_rate"] == 0.5  # 2 wins, 2 losses
    games = read_games(tmp_path)
    assert all(g["failure"]["kind"] in ("crash", "illegal") for g in games if "CrashBot" in g["pair"])
    assert "crash" in format_summary(summary)


def test_command_line_writes_all_files(tmp_path, capsys):
    out = tmp_path / "cli"
    code = evaluate.main(["random", FIRST, "--games", "4", "-j", "1", "--out", str(out), "--no-progress",
                          "--bootstrap", "20", "--anchor", "random"])  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "Bradley-Terry" in text and "Student t" in text and "bootstrap" in text
    for name in ("config.json", "games.jsonl", "summary.json", "summary.csv", "ratings.csv", "summary.png"):
        assert (out / name).stat().st_size > 0
    config = json.loads((out / "config.json").read_text())
    assert config["specs"] == ["random", FIRST] and config["games"] == 4 and config["duplicate"] is True
    summary = json.loads((out / "summary.json").read_text())
    assert {r["bot"]: r["elo"] for r in summary["ratings"]}["random"] == 0.0
    assert (out / "summary.png").read_bytes()[:4] == b"\x89PNG"


def test_labels_are_short_and_unique():
    specs = ["random", "random", f"{HERE}:FirstLegalBot", "ppo:models/run1/best.zip,deterministic=false"]
    assert schedule.bot_labels(specs) == ["random", "random#2", "FirstLegalBot", "ppo:best.zip,deterministic=false"]


def test_games_are_played_deal_by_deal_across_pairs(tmp_path):
    # before: all games of the first pair came first, so a mixed tournament's progress bar
    # showed the fast pairs' rate ("00:02 left" at a third of a 43-minute run)
    run_tournament(["random", "greedy", FIRST], games=6, seed=2, out=tmp_path, jobs=1, **QUICK)
    lines = [json.loads(line) for line in (tmp_path / "games.jsonl").read_text().splitlines()]
    order = [(g["deal"], g["swap"]) for g in lines]
    assert order == sorted(order)
    assert len({tuple(g["pair"]) for g in lines[:3]}) == 3, "the first three games are one of each pair"


def test_identical_players_never_get_a_zero_width_interval():
    # before: every deal scoring exactly 1/2 gave 0.500 [0.500, 0.500] at any n
    for n in (5, 50, 500):
        iv = score_interval(np.full(n, 0.5), 0.95, "deals")
        assert iv.estimate == 0.5 and iv.low < 0.5 < iv.high
        # nothing unseen in n deals: an unseen share below 1-(0.025)^(1/n) (about 3.7/n)
        p = 1 - 0.025 ** (1 / n)
        assert math.isclose(iv.high - iv.low, p, rel_tol=1e-9)
    wide, narrow = score_interval(np.full(5, 0.5)), score_interval(np.full(500, 0.5))
    assert wide.high - wide.low > 10 * (narrow.high - narrow.low)
    assert "rough" in wide.method and "rough" not in narrow.method
    assert "rough" in score_interval([0.5, 1.0, 0.0]).method


def test_stakes_are_reported_only_where_they_mean_something(tmp_path):
    # before: with most games drawn the mean stake came out as +3.30e+11 [-3.29e+11, ...]
    mostly_drawn = [0] * 30 + [1] + [0] * 25 + [-1] + [0] * 40 + [1]
    r = stake_results(mostly_drawn)
    assert r["meaningful"] == "nothing" and "infinite" in r["note"]
    r = stake_results(([0, 1, -1, 1] * 30)[:100])  # 25% draws: a mean, no interval
    assert r["meaningful"] == "mean" and "variance" in r["note"]
    r = stake_results([1, -1, 1, 0, 1, -1, -1, 1, 1, -1] * 10)  # 10% draws: both
    assert r["meaningful"] == "mean and interval" and r["note"] == ""
    # two random players draw about nine games in ten: the summary gives no stake, and says why
    summary = run_tournament(["random", "random"], games=20, seed=0, out=tmp_path, jobs=1, **QUICK)
    pair = summary["pairs"][0]
    assert math.isnan(pair["stake_mean"]) and "infinite" in pair["stake_note"]
    assert "n/a" in format_summary(summary) and "infinite" in format_summary(summary)


# a tournament on a plain install: scipy, matplotlib and tqdm (the 'eval' extra) cannot be imported
WITHOUT_EVAL = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("scipy", "matplotlib", "tqdm"):
            raise ImportError(f"blocked: {name}")
sys.meta_path.insert(0, Block())
import importlib.util
real = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name in ("scipy", "matplotlib", "tqdm") else real(name, *a)
from conquian_arena.tournament import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_tournament_needs_no_eval_extra(tmp_path, monkeypatch):
    # before: installed without the 'eval' extra, conquian-evaluate refused to play ("needs scipy ...")
    out = tmp_path / "t"
    args = ["random", "greedy", "--games", "8", "--seed", "3", "--out", str(out), "-j", "1", "--progress"]
    run = subprocess.run([sys.executable, "-c", WITHOUT_EVAL, *args], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    notes = [line for line in run.stderr.splitlines() if line.startswith("note: no ")]
    assert len(notes) == 1 and "matplotlib" in notes[0] and "tqdm" in notes[0] and "[eval]" in notes[0]
    assert "summary.png" not in run.stdout and not (out / "summary.png").exists()
    # the same games summarized again (a resume plays nothing) with scipy's quantiles: the same numbers
    from conquian_arena import stats as stats_module

    monkeypatch.setattr(stats_module, "t_quantile", lambda p, df: float(stats.t.ppf(p, df)))
    monkeypatch.setattr(stats_module, "normal_quantile", lambda p: float(stats.norm.ppf(p)))
    without = json.loads((out / "summary.json").read_text())
    run_tournament(["random", "greedy"], games=8, seed=3, out=out, jobs=1, **QUICK)
    with_scipy = json.loads((out / "summary.json").read_text())  # nan is null there
    compared = 0
    for mine, ref in zip(without["pairs"], with_scipy["pairs"], strict=True):
        for key, value in ref.items():
            if isinstance(value, float):
                assert mine[key] == pytest.approx(value, rel=1e-12), key
                compared += key.endswith(("_low", "_high"))
            else:
                assert mine[key] == value, key
    assert compared >= 2  # the score's and the stake's intervals at least


# --------------------------------------------------------------------------- the knobs and the script


def test_every_knob_is_one_config_field_and_one_option(tmp_path):
    parser = tournament.build_parser()
    for f in dataclasses.fields(TournamentConfig):
        assert f.metadata["help"], f"{f.name} has no help text"
    text = parser.format_help()
    for flag in ("--gauntlet", "--games", "--seed", "-j", "--jobs", "--forcing", "--no-duplicate", "--out",
                 "--confidence", "--bootstrap", "--bt-prior", "--anchor", "--no-progress", "--no-plot",
                 "--verify"):  # fmt: skip
        assert flag in text, flag
    default = TournamentConfig(specs=["a", "b"])
    knobs = {f.name: getattr(default, f.name) for f in dataclasses.fields(TournamentConfig)}
    assert vars(parser.parse_args(["a", "b"])) == knobs
    # the rule flags gather into the one rules field (the last flag of a field wins)
    assert TournamentConfig(**vars(parser.parse_args(["a", "b", "--forcing"]))).rules == FORCING
    assert TournamentConfig(**vars(parser.parse_args(["a", "b", "--forcing", "--no-forcing"]))).rules == STANDARD
    args = ["a", "b", "-j", "3", "--no-duplicate", "--no-plot", "--no-progress", "--games", "7", "--bt-prior", "0"]
    options = TournamentConfig(**vars(parser.parse_args(args)))
    assert (options.jobs, options.duplicate, options.plot, options.progress) == (3, False, False, False)
    assert (options.games, options.bt_prior) == (7, 0.0)
    with pytest.raises(TypeError):
        run_tournament(["random", "random"], games=2, speed=3)  # not a knob
    with pytest.raises(ValueError, match="jobs"):
        run_tournament(["random", "random"], games=2, jobs=0)
    # the knobs are kept with the run; those that do not define the tournament may change on a resume
    out = tmp_path / "r"
    run_tournament(TournamentConfig(specs=["random", FIRST], games=2, out=out, jobs=1, **QUICK))
    run_tournament(TournamentConfig(specs=["random", FIRST], games=2, out=str(out), jobs=2, confidence=0.9, **QUICK))
    options = json.loads((out / "config.json").read_text())["options"]
    assert options == TournamentConfig(specs=["random", FIRST], games=2, out=str(out), jobs=2, confidence=0.9,
                                       **QUICK).to_dict()  # fmt: skip


def test_evaluate_is_a_script_and_a_console_script_not_an_installed_module():
    from importlib import metadata

    try:
        dist = metadata.distribution("conquian-env")
    except metadata.PackageNotFoundError:
        pytest.skip("the project is not installed")
    assert "evaluate" not in (dist.read_text("top_level.txt") or "").split()
    scripts = {ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"}
    assert scripts["conquian-evaluate"] == "conquian_arena.tournament:main"
    assert {"conquian-play", "conquian-replay"} <= set(scripts)
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "evaluate.py", "--help"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0 and "--no-duplicate" in done.stdout and "bot specs:" in done.stdout


@pytest.mark.slow  # a tournament of 24 ismcts-py games in two workers, then its resume: 20 s
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_during_a_parallel_tournament_keeps_every_finished_game(tmp_path):
    # before: results came back in chunks of 32 per worker, so a Ctrl-C after a minute of
    # pimc games saved none of them
    out = tmp_path / "t"
    games = 24
    command = [sys.executable, "evaluate.py", "random", "ismcts-py:iterations=60", "--games", str(games), "-j", "2",
               "--out", str(out), "--no-progress", "--no-plot", "--bootstrap", "20"]  # fmt: skip
    root = Path(__file__).resolve().parent.parent
    # a session of its own, so that the Ctrl-C goes to the whole process group, as from a terminal
    # and with Ctrl-C's default action restored: a shell starts background jobs with SIGINT
    # ignored, and Python then never turns it into KeyboardInterrupt (CI launched that way)
    proc = subprocess.Popen(
        command,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    path = out / "games.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and path.read_bytes().count(b"\n") >= 2:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the tournament ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert b"interrupted: games played so far are saved" in err
    assert b"Traceback" not in err
    saved = path.read_text().splitlines()
    assert 2 <= len(saved) < games
    config = tournament.config_from_data(json.loads((out / "config.json").read_text()))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResumeWarning)  # every line is whole and replays
        assert len(game_lines.load_games(path, config)) == len(saved)
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{len(saved)} of {games} games already played, {games - len(saved)} to play" in done.stderr
    lines = path.read_text().splitlines()
    assert lines[: len(saved)] == saved and len(lines) == games
    assert sorted(json.loads(line)["index"] for line in lines) == list(range(games))
    assert not (out / "games.rejected.txt").exists()


# --------------------------------------------------------------------------- forged and bad lines on a resume


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """A finished random-vs-first tournament (no failures) and its summary, to copy and tamper with."""
    out = tmp_path_factory.mktemp("played") / "t"
    summary = run_tournament(["random", FIRST], games=8, seed=11, out=out, jobs=1, **QUICK)
    return out, summary


def _resume_after(tmp_path, played, edit):
    """Copy the played folder, let ``edit(lines)`` change games.jsonl's lines, resume; return
    (the summary, the warnings, the rejected text, the lines edited)."""
    src, _ = played
    out = tmp_path / "t"
    shutil.copytree(src, out)
    path = out / "games.jsonl"
    lines = path.read_text().splitlines()
    before = list(lines)
    edit(lines)
    changed = [i + 1 for i, (a, b) in enumerate(zip(before, lines, strict=True)) if a != b]
    lines = [signed_as_the_run(out, line) if i + 1 in changed else line for i, line in enumerate(lines)]
    path.write_text("".join(line + "\n" for line in lines))
    with pytest.warns(ResumeWarning) as record:
        summary = run_tournament(["random", FIRST], games=8, seed=11, out=out, jobs=1, **QUICK)
    rejected = (out / "games.rejected.txt").read_text()
    assert without_timing(read_games(out)) == without_timing(read_games(src))
    return summary, [str(w.message) for w in record], rejected, changed


def _forfeit(line: str, seat: int, kind: str, moves: int = 10) -> str:
    """A real line cut to ``moves`` moves and made a forfeit by ``seat``, consistent in every field
    the rules can check (winner, label, moves, decisions, timings)."""
    obj = json.loads(line)
    obj["actions"] = obj["actions"][:moves]
    states, _ = replay_states(RecordedGame(0, 0, obj))
    state_players = [s.player for s in states[:-1]]
    assert not states[-1].is_terminal()
    obj["moves"] = moves
    obj["failure"] = {"seat": seat, "kind": kind, "message": "RuntimeError: boom" if kind == "crash" else "resigned"}
    obj["winner"] = 1 - seat
    obj["winner_label"] = obj["seats"][1 - seat]
    obj["decisions"] = [state_players.count(s) + (s == seat) for s in (0, 1)]
    obj["think_time"] = [0.001 * d for d in obj["decisions"]]
    obj["max_think"] = [0.001 if d else 0.0 for d in obj["decisions"]]
    return json.dumps(obj)


@pytest.mark.parametrize("kind", ["crash", "quit", "illegal"])
def test_a_forged_forfeit_is_not_kept_on_a_resume(tmp_path, played, kind):
    # before: a real line cut to 10 moves with a failure and the winner set accordingly was
    # kept, and the summary counted a crash (or quit) and a win that never happened
    _, reference = played

    def edit(lines):
        lines[3] = _forfeit(lines[3], 1, kind)

    summary, messages, rejected, changed = _resume_after(tmp_path, played, edit)
    assert changed == [4] and len(messages) == 1
    assert "line 4 is a failure that re-playing the game does not reproduce" in messages[0]
    assert rejected.startswith("line 4\ta failure that re-playing the game does not reproduce")
    assert stable(summary) == stable(reference)


def _mutate(key, value):
    def edit(lines):
        obj = json.loads(lines[2])
        obj[key] = value
        lines[2] = json.dumps(obj)

    return edit


def _raw(text):
    def edit(lines):
        lines[2] = text

    return edit


def _other_index(lines):
    obj = json.loads(lines[2])
    obj["index"] = json.loads(lines[5])["index"]  # a duplicated index
    lines[2] = json.dumps(obj)


def _repeated_key(lines):
    lines[2] = lines[2][:-1] + ', "winner": ' + json.dumps(json.loads(lines[2])["winner"]) + "}"


BAD_LINES = {
    "nested brackets": _raw("[" * 3000 + "]" * 3000),
    "nested objects": _raw('{"a":' * 3000 + "1" + "}" * 3000),
    "index x": _mutate("index", "x"),
    "index 1.0": _mutate("index", 2.0),
    "index true": _mutate("index", True),
    "think_time NaN": _mutate("think_time", [float("nan"), 0.1]),
    "think_time -5": _mutate("think_time", [-5, 0.1]),
    "think_time 1e300": _mutate("think_time", [1e300, 0.1]),
    "max_think over think_time": _mutate("max_think", [1000.0, 0.0]),
    "decisions 0 0": _mutate("decisions", [0, 0]),
    "decisions as floats": lambda lines: _mutate("decisions", [float(d) for d in json.loads(lines[2])["decisions"]])(
        lines
    ),
    "duplicated index": _other_index,
    "players": _mutate("players", ["someone", "else"]),
    "an extra field": _mutate("comment", "hi"),
    "a repeated key": _repeated_key,
    "first 0.0": _mutate("first", 0.0),
    "deal_seed as float": lambda lines: _mutate("deal_seed", float(json.loads(lines[2])["deal_seed"]))(lines),
    "moves as float": lambda lines: _mutate("moves", float(json.loads(lines[2])["moves"]))(lines),
    "a list": _raw("[1, 2, 3]"),
}


@pytest.mark.parametrize("name", list(BAD_LINES))
def test_a_bad_line_is_set_aside_with_its_line_number_not_a_crash(tmp_path, played, name):
    # before: deep nesting crashed the resume (RecursionError), "index": "x" crashed the
    # summary (TypeError), and impossible numbers, a duplicated index or another players field were kept
    _, reference = played
    summary, messages, rejected, changed = _resume_after(tmp_path, played, BAD_LINES[name])
    assert changed == [3] and len(messages) == 1 and "line 3 is " in messages[0], messages
    assert len(rejected.splitlines()) == 1 and rejected.startswith("line 3\t")
    assert stable(summary) == stable(reference)


def test_genuine_failures_are_re_played_and_kept_on_a_resume(tmp_path, monkeypatch):
    specs = ["random", CRASH, ILLEGAL]
    reference = run_tournament(specs, games=4, seed=2, out=tmp_path, jobs=1, **QUICK)
    failures = [g["index"] for g in read_games(tmp_path) if g["failure"] is not None]
    assert failures
    played = []
    real_play = game_lines.play_task
    monkeypatch.setattr(game_lines, "play_task", lambda task: played.append(task.index) or real_play(task))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResumeWarning)
        resumed = run_tournament(specs, games=4, seed=2, out=tmp_path, jobs=1, **QUICK)
    assert sorted(played) == sorted(failures)  # each failure confirmed by re-playing it, and kept
    assert stable(resumed) == stable(reference)
    assert not (tmp_path / "games.rejected.txt").exists()


class FlakyBot(Agent):
    """Crashes on its first game in a process, then plays: its failure depends on more than its seed."""

    name = "flaky"
    crashed = False

    def act(self, observation, action_mask, view):
        if not FlakyBot.crashed:
            FlakyBot.crashed = True
            raise RuntimeError("first game only")
        return int(np.flatnonzero(action_mask)[0])


def test_a_failure_the_re_play_does_not_reproduce_is_set_aside_and_played_again(tmp_path):
    specs = ["random", f"{HERE}:FlakyBot"]
    FlakyBot.crashed = False
    run_tournament(specs, games=2, seed=2, out=tmp_path, jobs=1, **QUICK)
    assert [g["failure"] is not None for g in read_games(tmp_path)].count(True) == 1
    with pytest.warns(ResumeWarning, match="a failure that re-playing the game does not reproduce"):
        run_tournament(specs, games=2, seed=2, out=tmp_path, jobs=1, **QUICK)
    assert all(g["failure"] is None for g in read_games(tmp_path))
    assert "first game only" in (tmp_path / "games.rejected.txt").read_text()


def test_one_seed_derivation_checks_its_words():
    from conquian_env.seeding import derive_seed

    assert derive_seed(3, 1, 5) == derive_seed(3, 1, 5) != derive_seed(3, 1, 6)
    assert 0 <= derive_seed(2**70, 0) < 2**63
    for bad, error in [(-1, ValueError), (True, TypeError), (1.0, TypeError), ("3", TypeError)]:
        with pytest.raises(error, match="derive_seed words"):
            derive_seed(0, bad)


def test_both_runners_play_a_task_through_the_one_worker(tmp_path):
    # the local runner and the Ray task's body (called here without Ray) play the same games
    from conquian_arena import ray_runner, worker

    specs = ["greedy", "random"]
    run_tournament(specs, games=4, seed=9, out=tmp_path, jobs=1, **QUICK)
    config = tournament.make_config(TournamentConfig(specs=specs, games=4, seed=9))
    spec_of = dict(zip(config["labels"], config["bot_specs"], strict=True))
    tasks = schedule.make_schedule(config)
    assert tournament.Task is worker.Task and tournament.play_task is worker.play_task
    rules = config["rules"]  # the rules object, parsed once
    on_ray = [ray_runner._play_remote(t, spec_of, schedule.bot_seeds(config), rules) for t in tasks]
    worker.setup(spec_of, schedule.bot_seeds(config), rules)
    local = [worker.play_task(t) for t in tasks]
    assert without_timing(local) == without_timing(on_ray) == without_timing(read_games(tmp_path))


# --------------------------------------------------------------------------- forged results (issue 25)


def _forged_losses(out: Path, victim: str, keep_check: bool) -> tuple[list[str], int]:
    """games.jsonl's lines with every game ``victim`` won replaced by a loss: the same deal, seats,
    seeds and names, legal moves and a consistent result, played by a random bot in the victim's
    seat against greedy in the other (the issue's forged record).  ``keep_check``: the forged
    line keeps the real line's check (else it has none).  Returns the lines and the number forged."""
    from agents.registry import make_agent
    from conquian_arena.match import play_game
    from conquian_arena.worker import schedule_fields

    config = json.loads((out / "config.json").read_text())
    tasks = schedule.make_schedule(config)
    names = schedule.bot_names(config)
    lines, forged = [], 0
    for text in (out / "games.jsonl").read_text().splitlines():
        obj = json.loads(text)
        if obj["winner_label"] != victim:
            lines.append(text)
            continue
        task = tasks[obj["index"]]
        seat = task.seats.index(victim)
        hands, stock = deal_for_seed(task.deal_seed)
        for k in range(1, 200):  # impostors' game (their own seeds) that the victim's seat loses
            bots = [make_agent("greedy", k), make_agent("greedy", k)]
            bots[seat] = make_agent("random", k)
            record = play_game(bots, hands=hands, stock=stock, first=0, rules=rules_of_record(config), seed=k)
            if record.winner == 1 - seat and record.failure is None:
                break
        assert record.winner == 1 - seat
        line = {**schedule_fields(task), **record.to_dict(), "winner_label": task.seats[1 - seat]}
        line["players"] = [names[label] for label in task.seats]
        fake = json.dumps(line)
        if keep_check:
            fake = fake[:-1] + _CHECK.search(text).group() + "}"
        lines.append(fake)
        forged += 1
    return lines, forged


def test_a_forged_record_of_legal_losses_is_caught_on_a_resume(tmp_path):
    # before: each line was checked by the rules only, so a greedy win replaced by a legal game it
    # loses (same deal, seats, seeds and names, a consistent result) was kept: greedy's score
    # against random went from 0.875 to 0.125 on the resume, without a warning
    specs = ["greedy", "random"]
    reference = run_tournament(specs, games=16, seed=4, out=tmp_path / "ref", jobs=1, **QUICK)
    assert reference["pairs"][0]["score"] == 0.875  # 12 wins, 4 draws
    for keep_check in (False, True):
        out = tmp_path / f"forged{keep_check}"
        shutil.copytree(tmp_path / "ref", out)
        lines, forged = _forged_losses(out, "greedy", keep_check)
        assert forged == reference["pairs"][0]["wins"] >= 12
        (out / "games.jsonl").write_text("".join(line + "\n" for line in lines))
        with pytest.warns(ResumeWarning) as record:
            resumed = run_tournament(specs, games=16, seed=4, out=out, jobs=1, **QUICK)
        messages = [str(w.message) for w in record]
        assert len(messages) == forged
        why = "whose check does not match it" if keep_check else "without its check"
        assert all(why in m for m in messages), messages[0]
        assert stable(resumed) == stable(reference)
        assert without_timing(read_games(out)) == without_timing(read_games(tmp_path / "ref"))


def test_a_forgery_signed_with_the_runs_key_is_caught_by_verify(tmp_path):
    # whoever can read games.key can sign a forged line: the checks of the rules and of the key
    # pass it (docs/tournaments.md says so), and --verify, re-playing every game, sets it aside
    specs = ["greedy", "random"]
    reference = run_tournament(specs, games=16, seed=4, out=tmp_path / "ref", jobs=1, **QUICK)
    out = tmp_path / "t"
    shutil.copytree(tmp_path / "ref", out)
    lines, forged = _forged_losses(out, "greedy", keep_check=False)
    (out / "games.jsonl").write_text("".join(signed_as_the_run(out, line) + "\n" for line in lines))
    shutil.copytree(out, tmp_path / "t2")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResumeWarning)
        fooled = run_tournament(specs, games=16, seed=4, out=tmp_path / "t2", jobs=1, **QUICK)
    assert fooled["pairs"][0]["score"] == pytest.approx(1 - reference["pairs"][0]["score"])  # the limit, as documented
    with pytest.warns(ResumeWarning) as record:
        resumed = run_tournament(specs, games=16, seed=4, out=out, jobs=1, verify=True, **QUICK)
    messages = [str(w.message) for w in record]
    assert len(messages) == forged
    assert all("a game (--verify) that re-playing the game does not reproduce" in m for m in messages), messages[0]
    assert stable(resumed) == stable(reference)
    # the genuine lines pass --verify: nothing more is set aside
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResumeWarning)
        again = run_tournament(specs, games=16, seed=4, out=out, jobs=1, verify=True, **QUICK)
    assert stable(again) == stable(reference)


def test_a_folder_without_its_key_needs_verify_and_is_signed_anew(tmp_path):
    specs = ["greedy", "random"]
    reference = run_tournament(specs, games=6, seed=5, out=tmp_path, jobs=1, **QUICK)
    key = (tmp_path / "games.key").read_bytes()
    assert len(key) == 65 and (tmp_path / "games.key").stat().st_mode & 0o077 == 0  # the owner's only
    (tmp_path / "games.key").unlink()  # a folder from before lines were checked, or a deleted key
    with pytest.raises(ValueError, match="no games.key, the key that checks them.*--verify"):
        run_tournament(specs, games=6, seed=5, out=tmp_path, jobs=1, **QUICK)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResumeWarning)
        resumed = run_tournament(specs, games=6, seed=5, out=tmp_path, jobs=1, verify=True, **QUICK)
        assert stable(resumed) == stable(reference)
        assert (tmp_path / "games.key").read_bytes() != key  # a new key signs the re-played lines
        again = run_tournament(specs, games=6, seed=5, out=tmp_path, jobs=1, **QUICK)
    assert stable(again) == stable(reference)
    (tmp_path / "games.key").write_text("not a key\n")
    with pytest.raises(ValueError, match="is not a run key"):
        run_tournament(specs, games=6, seed=5, out=tmp_path, jobs=1, **QUICK)


def _child_blas_env(_):
    import os

    return {name: os.environ.get(name) for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def test_a_pools_workers_run_one_blas_thread_and_a_users_setting_is_kept(monkeypatch):
    """Two workers with numpy's default BLAS threads on two cores slowed the deep-sets scorer
    3-5 times: the pool's processes start with one BLAS thread each, unless the user said otherwise,
    and this process's environment is left as it was."""
    from conquian_arena import worker

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")
    with worker.worker_pool(2, ({"a": "random", "b": "random"}, {}, None)) as pool:
        seen = pool.map(_child_blas_env, range(2))
    assert seen == [{"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "3"}] * 2
    import os

    assert "OPENBLAS_NUM_THREADS" not in os.environ and os.environ["MKL_NUM_THREADS"] == "3"
