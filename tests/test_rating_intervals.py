"""The rating interval follows the score interval's rule: no zero-width interval from a handful of
deals or from identical players (conquian_arena/stats.py, :func:`rating_interval`)."""

from __future__ import annotations

import json
import math

import pytest

from conquian_arena.stats import ELO_PER_LOGIT, rating_interval, score_ratings, summarize
from conquian_arena.stats import score_interval as score_interval_of
from conquian_arena.tournament import run_tournament

QUICK = {"bootstrap": 60, "plot": False, "progress": False}


@pytest.fixture(scope="module")
def identical(tmp_path_factory):
    """100 duplicate deals of greedy against greedy (every deal scores 1/2) and of three greedys."""
    out = tmp_path_factory.mktemp("identical")
    two = run_tournament(["greedy", "greedy"], games=200, seed=3, out=out / "two", jobs=1, **QUICK)
    three = run_tournament(["greedy", "greedy", "greedy"], games=20, seed=4, out=out / "three", jobs=1, **QUICK)
    games = {
        name: [json.loads(line) for line in (out / name / "games.jsonl").read_text().splitlines()]
        for name in ("two", "three")
    }
    return {"two": (two, games["two"]), "three": (three, games["three"])}


def test_identical_players_get_no_zero_width_rating_interval_from_1_to_100_deals(identical):
    # before: identical players over 100 deals printed +0 [+0, +0] while the score interval of the
    # same games was [0.482, 0.518]; with 1 or 2 deals every pair printed +0 [+0, +0]
    summary, games = identical["two"]
    assert {g["deal"] for g in games} == set(range(100))
    zero_width = []
    for deals in range(1, 101):
        part = summarize([g for g in games if g["deal"] < deals], summary["config"], bootstrap=60)
        pair = part["pairs"][0]
        assert pair["score"] == 0.5 and pair["score_low"] < 0.5 < pair["score_high"]
        for r in part["ratings"]:
            assert r["elo_low"] <= r["elo"] <= r["elo_high"]
            if not r["elo_high"] - r["elo_low"] > 0:
                zero_width.append((deals, r["bot"]))
        assert "widened to the ratings the score interval implies" in part["methods"]["rating_interval"]
    assert zero_width == []
    # the same rule as the score's: at 100 deals, [0.482, 0.518] is +-12.5 Elo of difference, +-6.3 each
    rating = summary["ratings"][0]
    low_score = summary["pairs"][0]["score_low"]
    assert rating["elo_low"] == pytest.approx(0.5 * ELO_PER_LOGIT * math.log(low_score / (1 - low_score)))
    assert -8 < rating["elo_low"] < -4 and 4 < rating["elo_high"] < 8


def test_three_identical_players_and_a_single_deal(identical):
    summary, games = identical["three"]
    for deals in (1, 2, 10):
        part = summarize([g for g in games if g["deal"] < deals], summary["config"], bootstrap=60)
        assert all(r["elo_high"] - r["elo_low"] > 0 for r in part["ratings"]), deals


def test_a_clear_result_over_many_deals_keeps_its_bootstrap_interval(tmp_path):
    summary = run_tournament(["greedy", "random"], games=60, seed=5, out=tmp_path, jobs=1, **QUICK)
    assert "widened" not in summary["methods"]["rating_interval"]
    greedy = next(r for r in summary["ratings"] if r["bot"] == "greedy")
    assert 0 < greedy["elo_low"] < greedy["elo"] < greedy["elo_high"]


def test_the_rule_on_its_own():
    # all deals at 1/2 over 100 deals: the exact bound on the unseen share, on the Elo scale
    score = score_interval_of([0.5] * 100)
    low, high = score_ratings(score, 2)
    assert low == pytest.approx(-high) and high > 0
    assert rating_interval(0.0, 0.0, [0.5] * 100, 2) == (low, high, True)
    # a bot that won all of one deal: no upper bound a single deal can give
    low, high, widened = rating_interval(100.0, 100.0, [1.0], 2)
    assert widened and high == math.inf and low < 100
    # enough deals that differ: the bootstrap's interval as it is
    varied = [0.0, 0.5, 1.0] * 10
    assert rating_interval(-20.0, 30.0, varied, 2) == (-20.0, 30.0, False)
    # the anchored scale moves the implied interval with the mean rating
    shifted = rating_interval(50.0, 50.0, [0.5] * 40, 2, shift=50.0)
    assert shifted[0] < 50.0 < shifted[1] and shifted[0] + shifted[1] == pytest.approx(100.0)
