"""The statistics of a tournament, each with the method it uses stated in the summary.

* score of A against B (win 1, draw 1/2): Student t interval over independent units,
  which are deals when deals are duplicated (the two games of a deal are one paired
  sample: the unit's value is A's mean score over the two games) and games otherwise
  (:func:`score_interval`, which stays honest when every unit scored the same).
* stakes (RULES.md section 6): the games of a pair are a match in deal order; stake 1,
  doubled after each draw, back to 1 after a decided game (:func:`stake_results`).
* ratings: Bradley-Terry maximum likelihood with draws as half a win for each side plus
  virtual draws per pair (:func:`bradley_terry`), on the Elo scale, with percentile
  bootstrap intervals over deals (:func:`bootstrap_ratings`).  The bootstrap cannot see what
  a handful of deals, or deals that all scored the same, did not show (identical players:
  every resample the same, ``+0 [+0, +0]``), so there a bot's interval also holds the ratings
  its score interval implies (:func:`score_ratings`): the score's rule, on the Elo scale.

:func:`summarize` computes all of them from the games of a tournament.  None needs scipy: the
quantiles are :func:`t_quantile` and :func:`normal_quantile`, which give scipy's numbers
(tests/test_evaluate.py compares them where scipy is installed).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, NamedTuple

import numpy as np

from conquian_env.seeding import BOOTSTRAP, stream_rng

from .record import FAILURE_KINDS

ELO_PER_LOGIT = 400.0 / math.log(10.0)
#: fewer independent units than this and an interval is flagged as rough
FEW_UNITS = 20


def normal_quantile(p: float) -> float:
    """The standard normal distribution's quantile (scipy.stats.norm.ppf without scipy): Acklam's
    rational approximation polished by Halley steps on math.erfc, to within a few ulps."""
    if not 0.0 < p < 1.0:
        if p == 0.0:
            return -math.inf
        if p == 1.0:
            return math.inf
        raise ValueError(f"a probability is in [0, 1], got {p!r}")
    a = (
        -3.969683028665376e01,
        2.209460984245205e02,
        -2.759285104469687e02,
        1.383577518672690e02,
        -3.066479806614716e01,
        2.506628277459239e00,
    )
    b = (
        -5.447609879822406e01,
        1.615858368580409e02,
        -1.556989798598866e02,
        6.680131188771972e01,
        -1.328068155288572e01,
    )
    c = (
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e00,
        -2.549732539343734e00,
        4.374664141464968e00,
        2.938163982698783e00,
    )
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    q = min(p, 1.0 - p)
    if q < 0.02425:
        r = math.sqrt(-2.0 * math.log(q))
        x = (((((c[0] * r + c[1]) * r + c[2]) * r + c[3]) * r + c[4]) * r + c[5]) / (
            (((d[0] * r + d[1]) * r + d[2]) * r + d[3]) * r + 1.0
        )
    else:
        r = (q - 0.5) ** 2
        s = q - 0.5
        x = (
            (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
            * s
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0)
        )
    # x is the lower-tail quantile of q <= 1/2; Halley steps on the lower tail 0.5 * erfc(-x / sqrt 2)
    for _ in range(3):
        e = 0.5 * math.erfc(-x / math.sqrt(2.0)) - q
        u = e * math.sqrt(2.0 * math.pi) * math.exp(x * x / 2.0)
        x = x - u / (1.0 + x * u / 2.0)
    return x if p <= 0.5 else -x


def _log_gamma_ratio_half(a: float) -> float:
    """log(Gamma(a + 1/2) / Gamma(a)), accurate for large a too (where the difference of two
    math.lgamma values loses digits): Stirling's series from a = 10 on."""
    if a < 10:
        return math.lgamma(a + 0.5) - math.lgamma(a)
    z = a + 0.5

    def series(z: float) -> float:
        return 1 / (12 * z) - 1 / (360 * z**3) + 1 / (1260 * z**5) - 1 / (1680 * z**7) + 1 / (1188 * z**9)

    return a * math.log1p(0.5 / a) + 0.5 * math.log(a) - 0.5 + series(z) - series(a)


def _betainc(a: float, b: float, x: float, y: float, log_beta: float, swapped: bool = False) -> float:
    """The regularized incomplete beta function I_x(a, b), with y = 1 - x given exactly by the caller
    and log_beta = log(Gamma(a + b) / (Gamma(a) Gamma(b))); the continued fraction of Numerical
    Recipes (modified Lentz), on the side where it converges fast."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0) and not swapped:
        return 1.0 - _betainc(b, a, y, x, log_beta, swapped=True)
    front = math.exp(
        log_beta + a * (math.log(x) if x < 0.5 else math.log1p(-y)) + b * (math.log1p(-x) if x < 0.5 else math.log(y))
    )
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return front * h / a


def t_quantile(p: float, df: float) -> float:
    """Student's t distribution's quantile (scipy.stats.t.ppf without scipy): safeguarded Newton
    steps on the exact t distribution function (through the incomplete beta function), from the
    normal quantile; closed forms for 1 and 2 degrees of freedom."""
    if not df > 0:
        raise ValueError(f"degrees of freedom are positive, got {df!r}")
    if not 0.0 < p < 1.0:
        if p in (0.0, 1.0):
            return math.inf if p else -math.inf
        raise ValueError(f"a probability is in [0, 1], got {p!r}")
    if p == 0.5:
        return 0.0
    q = min(p, 1.0 - p)  # the upper tail beyond the answer t > 0
    if df == 1:
        t = 1.0 / math.tan(math.pi * q)
    elif df == 2:
        t = (1.0 - 2.0 * q) / math.sqrt(2.0 * q * (1.0 - q))
    else:
        ratio = _log_gamma_ratio_half(df / 2)  # log Gamma((df+1)/2) / Gamma(df/2)
        log_beta = ratio - 0.5 * math.log(math.pi)  # log B(df/2, 1/2)^-1
        log_density0 = ratio - 0.5 * math.log(df * math.pi)

        def excess(t: float) -> float:
            """P(T > t) - q, from the side of 1/4 that keeps its digits."""
            x, y = df / (df + t * t), t * t / (df + t * t)
            if q < 0.25:
                return 0.5 * _betainc(df / 2, 0.5, x, y, log_beta) - q
            return (0.5 - q) - 0.5 * _betainc(0.5, df / 2, y, x, log_beta)

        low, high = 0.0, math.inf
        t = max(-normal_quantile(q), 1e-300)
        for _ in range(400):
            e = excess(t)
            if e > 0:
                low = t
            else:
                high = t
            new = t + e / math.exp(log_density0 - (df + 1) / 2 * math.log1p(t * t / df))
            if not low < new < high:  # Newton left the bracket: bisect it
                new = (low + high) / 2 if math.isfinite(high) else 2 * t
            if abs(new - t) <= 2e-16 * new:
                t = new
                break
            t = new
    return t if p > 0.5 else -t


class Interval(NamedTuple):
    estimate: float
    low: float
    high: float
    method: str


def t_interval(values: Any, confidence: float = 0.95) -> tuple[float, float, float]:
    """Student t interval for the mean of independent values (nan bounds with fewer than 2)."""
    x = np.asarray(values, dtype=float)
    mean = float(x.mean()) if x.size else math.nan
    if x.size < 2:
        return mean, math.nan, math.nan
    sem = float(x.std(ddof=1)) / math.sqrt(x.size)
    half = t_quantile(0.5 + confidence / 2, x.size - 1) * sem
    return mean, mean - half, mean + half


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion."""
    z = normal_quantile(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return center - half, center + half


def score_interval(unit_scores: Any, confidence: float = 0.95, unit: str = "games") -> Interval:
    """Mean score (win 1, draw 1/2, loss 0) with its interval over independent units.

    ``unit_scores``: one value in [0, 1] per independent unit: per game, or per deal (the
    mean of the two seat-swapped games) with duplicate deals.  A draw makes the score
    non-binomial, so the interval is Student t on the unit values, clipped to [0, 1].
    If all units score 0 or all score 1 (zero variance) the Wilson interval is used.  If
    all score the same value ``v`` in between (two identical players: every deal 1/2), a
    zero-width t interval would claim certainty; instead the share ``p`` of units that
    could score otherwise and still go unseen in ``n`` is bounded (exact binomial,
    ``1 - (alpha/2)^(1/n)``, the "rule of three"), and the interval is
    ``[v - p v, v + p (1 - v)]``.  Fewer than :data:`FEW_UNITS` units are flagged in the
    method text: treat such an interval as rough.
    """
    x = np.asarray(unit_scores, dtype=float)
    n = x.size
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, "no games")
    few = f"; only {n} {unit}: a rough interval" if n < FEW_UNITS else ""
    if np.all(x == x[0]):
        v = float(x[0])
        if v in (0.0, 1.0):
            low, high = wilson_interval(float(x.sum()), n, confidence)
            return Interval(v, low, high, f"Wilson score interval, all {n} {unit} scored {v:g}{few}")
        p = 1.0 - ((1.0 - confidence) / 2) ** (1.0 / n)
        return Interval(
            v, v - p * v, v + p * (1.0 - v), f"all {n} {unit} scored {v:g}: bound on the unseen share (exact){few}"
        )
    mean, low, high = t_interval(x, confidence)
    return Interval(mean, max(0.0, low), min(1.0, high), f"Student t interval over {n} {unit}{few}")


def stake_results(outcomes: Any, confidence: float = 0.95) -> dict[str, Any]:
    """Money of a match under RULES.md section 6, from A's side.

    ``outcomes`` in match order: +1 A won, -1 A lost, 0 draw.  Stake 1, doubled after each
    draw, reset to 1 after a decided game.  Returns the stake and A's winnings per game,
    the total, the mean per game and its interval.  Interval: the match is a sequence of
    independent cycles (draws, then the decided game that resets the stake; a trailing run
    of draws is the last cycle); the mean is sum(winnings)/sum(games) over cycles, with the
    delta-method standard error of that ratio and a t quantile with cycles-1 degrees of freedom.
    """
    stakes, winnings, cycles = [], [], []
    stake, cyc_win, cyc_len = 1, 0, 0
    for outcome in outcomes:
        outcome = int(outcome)
        if outcome not in (-1, 0, 1):
            raise ValueError(f"outcomes are +1 (A won), -1 (A lost) or 0 (draw), got {outcome!r}")
        stakes.append(stake)
        winnings.append(outcome * stake)
        cyc_win += outcome * stake
        cyc_len += 1
        if outcome == 0:
            stake *= 2
        else:
            cycles.append((cyc_win, cyc_len))
            stake, cyc_win, cyc_len = 1, 0, 0
    if cyc_len:
        cycles.append((cyc_win, cyc_len))
    n = len(winnings)
    total = int(sum(winnings))
    mean = _ratio(total, n) if n else math.nan
    low = high = math.nan
    m = len(cycles)
    # With draws at rate d a cycle's stake is 2^K, K geometric: its mean is finite only for
    # d < 1/2 and its variance only for d < 1/4.  Past those rates a sample mean or an
    # interval is dominated by the longest run of draws and means nothing.
    # The summary reports only what is meaningful (``meaningful``), and says why (``note``).
    draw_share = sum(1 for w in winnings if w == 0) / n if n else math.nan
    note, meaningful = "", "mean and interval"
    if n and draw_share >= 0.5:
        meaningful = "nothing"
        note = f"{draw_share:.0%} draws: the expected stake is infinite at 1/2 or more, so no mean is given"
    elif n and draw_share >= 0.25:
        meaningful = "mean"
        note = f"{draw_share:.0%} draws: the stake's variance is infinite at 1/4 or more, so no interval is given"
    if m >= 2 and math.isfinite(mean) and max(stakes) < 2**1000:  # beyond that floats overflow
        w = np.array([c[0] for c in cycles], dtype=float)
        length = np.array([c[1] for c in cycles], dtype=float)
        resid = w - mean * length
        se = math.sqrt(float(np.sum(resid**2)) / (m - 1) / m) / float(length.mean())
        half = t_quantile(0.5 + confidence / 2, m - 1) * se
        low, high = mean - half, mean + half
    return {
        "stakes": stakes,
        "winnings": winnings,
        "total": total,
        "mean": mean,
        "low": low,
        "high": high,
        "max_stake": max(stakes) if stakes else 0,
        "cycles": m,
        "method": f"regenerative ratio estimator over {m} stake cycles, delta-method t interval",
        "note": note,
        "meaningful": meaningful,
    }


def _ratio(numerator: int, denominator: int) -> float:
    """numerator / denominator as a float, +-inf when it does not fit (2**1024 after 1024 draws in a row)."""
    try:
        return numerator / denominator
    except OverflowError:
        return math.inf if numerator > 0 else -math.inf


def _strongly_connected(beats: np.ndarray) -> bool:
    """Is every bot reachable from every other along 'scored something against' edges?"""
    k = beats.shape[0]
    for adj in (beats, beats.T):
        seen, todo = {0}, [0]
        while todo:
            i = todo.pop()
            for j in np.flatnonzero(adj[i]):
                if int(j) not in seen:
                    seen.add(int(j))
                    todo.append(int(j))
        if len(seen) < k:
            return False
    return True


def bradley_terry(
    wins: Any, prior_draws: float = 0.0, anchor: int | None = None, tol: float = 1e-10, max_iter: int = 100
) -> np.ndarray:
    """Bradley-Terry strengths (natural-log scale) by maximum likelihood.

    ``wins[i, j]``: points bot i scored against bot j (wins + draws / 2); games between i
    and j are ``wins[i, j] + wins[j, i]``.  P(i beats j) = 1 / (1 + exp(r_j - r_i)).
    ``prior_draws`` virtual draws are added to every pair that played.  Returned strengths
    have mean 0, or ``r[anchor] = 0``.  Raises ValueError when no finite maximum exists
    (some group of bots never scored against the rest).  Multiply by ``ELO_PER_LOGIT``
    for Elo points.
    """
    w = np.array(wins, dtype=float)
    k = w.shape[0]
    if w.shape != (k, k) or np.any(w < 0):
        raise ValueError(f"wins must be a square non-negative matrix, got shape {w.shape}")
    np.fill_diagonal(w, 0.0)
    played = (w + w.T) > 0
    w = w + played * (prior_draws / 2.0)
    n = w + w.T
    if k == 1:
        return np.zeros(1)
    if not _strongly_connected(w > 0):
        raise ValueError(
            "no finite Bradley-Terry ratings: some bots never scored a point against the others "
            "(add virtual draws with --bt-prior > 0)"
        )

    def loglik(r: np.ndarray) -> float:
        diff = r[:, None] - r[None, :]
        return float(np.sum(w * -np.logaddexp(0.0, -diff)))

    r = np.zeros(k)
    current = loglik(r)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(r[None, :] - r[:, None]))  # p[i, j] = P(i beats j)
        grad = np.sum(w - n * p, axis=1)
        info = n * p * p.T  # observed information: off-diagonal -H
        hess = info.copy()
        np.fill_diagonal(hess, -info.sum(axis=1))  # this is -(Hessian); solve on r[1:], r[0] = 0
        step = np.zeros(k)
        step[1:] = np.linalg.solve(-hess[1:, 1:], grad[1:])
        t = 1.0
        while True:
            candidate = r + t * step
            value = loglik(candidate)
            if value >= current - 1e-12 or t < 1e-8:
                break
            t /= 2
        r, current = candidate, value
        if np.max(np.abs(t * step)) < tol:
            break
    return r - (r[anchor] if anchor is not None else r.mean())


def bootstrap_ratings(
    unit_wins: np.ndarray,
    resamples: int,
    prior_draws: float,
    anchor: int | None,
    confidence: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Percentile bootstrap of Bradley-Terry Elo ratings over independent units (deals).

    ``unit_wins[d, i, j]``: points of bot i against bot j in the games of unit d.  Each
    resample draws the units with replacement and refits.  Returns (low, high, failed)
    where ``failed`` counts resamples without finite ratings (left out).
    """
    units, k = unit_wins.shape[0], unit_wins.shape[1]
    rng = stream_rng(seed, BOOTSTRAP)
    counts = rng.multinomial(units, np.full(units, 1.0 / units), size=resamples)
    totals = (counts @ unit_wins.reshape(units, k * k)).reshape(resamples, k, k)
    fits, failed = [], 0
    for b in range(resamples):
        try:
            fits.append(bradley_terry(totals[b], prior_draws, anchor) * ELO_PER_LOGIT)
        except ValueError:
            failed += 1
    if not fits:
        return np.full(k, math.nan), np.full(k, math.nan), failed
    alpha = (1 - confidence) / 2
    arr = np.array(fits)
    return np.quantile(arr, alpha, axis=0), np.quantile(arr, 1 - alpha, axis=0), failed


def elo_of_score(score: float) -> float:
    """The Elo difference at which the expected score is ``score`` (+-inf at 1 and 0)."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return ELO_PER_LOGIT * math.log(score / (1.0 - score))


def score_ratings(score: Interval, bots: int) -> tuple[float, float]:
    """The ratings (mean 0 over ``bots`` bots) a bot's score interval against the field implies:
    a rating ``r`` is ``(k - 1) / k`` of the Elo difference to the mean of the ``k - 1`` others,
    so the score bounds map to ``(k - 1) / k * elo_of_score(bound)``."""
    share = (bots - 1) / bots if bots > 1 else 0.0
    return share * elo_of_score(score.low), share * elo_of_score(score.high)


def rating_interval(
    boot_low: float, boot_high: float, unit_scores: Any, bots: int, confidence: float = 0.95, shift: float = 0.0
) -> tuple[float, float, bool]:
    """A bot's rating interval: the bootstrap's ``[boot_low, boot_high]``, widened to hold the
    ratings its score interval over ``unit_scores`` (its mean score in each deal) implies
    (:func:`score_ratings`, moved by ``shift``: the mean rating when the scale is anchored on a
    bot) when its deals all scored the same or there are fewer than :data:`FEW_UNITS` of them;
    returns (low, high, whether it was widened)."""
    x = np.asarray(unit_scores, dtype=float)
    same = x.size > 0 and bool(np.all(x == x[0]))
    bootstrap_ok = math.isfinite(boot_low) and math.isfinite(boot_high)
    if x.size == 0 or (not same and x.size >= FEW_UNITS and bootstrap_ok):
        return boot_low, boot_high, False
    low, high = (bound + shift for bound in score_ratings(score_interval(x, confidence), bots))
    if math.isnan(low) or math.isnan(high):
        return boot_low, boot_high, False
    if not math.isnan(boot_low):
        low, high = min(low, boot_low), max(high, boot_high)
    return low, high, (low, high) != (boot_low, boot_high)


def _score_of(game: dict[str, Any], label: str) -> float:
    if game["winner_label"] is None:
        return 0.5
    return 1.0 if game["winner_label"] == label else 0.0


def _pair_row(a: str, b: str, pair_games: list[dict[str, Any]], confidence: float, unit: str) -> dict[str, Any]:
    """One pair's row of ``summary.json``'s ``pairs``: A's record, score, stakes, game lengths,
    failures (``pair_games`` sorted by deal and swap here, in place)."""
    pair_games.sort(key=lambda g: (g["deal"], g["swap"]))
    scores_a = np.array([_score_of(g, a) for g in pair_games])
    deals = np.array([g["deal"] for g in pair_games])
    unique_deals = np.unique(deals)
    unit_scores = np.array([scores_a[deals == d].mean() for d in unique_deals])
    score = score_interval(unit_scores, confidence, unit)
    outcomes = [0 if s == 0.5 else (1 if s == 1.0 else -1) for s in scores_a]
    stake = stake_results(outcomes, confidence)
    moves = np.array([g["moves"] for g in pair_games], dtype=float)
    fails = {label: dict.fromkeys(FAILURE_KINDS, 0) for label in (a, b)}
    for g in pair_games:
        if g["failure"]:
            fails[g["seats"][g["failure"]["seat"]]][g["failure"]["kind"]] += 1
    wins, draws = int(np.sum(scores_a == 1.0)), int(np.sum(scores_a == 0.5))
    first_score = [1.0 - s if g["swap"] else s for g, s in zip(pair_games, scores_a, strict=True)]
    return {
        "a": a,
        "b": b,
        "games": len(pair_games),
        "units": len(unique_deals),
        "wins": wins,
        "draws": draws,
        "losses": len(pair_games) - wins - draws,
        "score": score.estimate,
        "score_low": score.low,
        "score_high": score.high,
        "score_method": score.method,
        "draw_rate": draws / len(pair_games),
        # share of the decided games that A won (the usual figure when draws are common)
        "decided_win_rate": wins / decided if (decided := len(pair_games) - draws) else math.nan,
        "stake_mean": stake["mean"] if stake["meaningful"] != "nothing" else math.nan,
        "stake_low": stake["low"] if stake["meaningful"] == "mean and interval" else math.nan,
        "stake_high": stake["high"] if stake["meaningful"] == "mean and interval" else math.nan,
        "stake_total": stake["total"],
        "stake_max": stake["max_stake"],
        "stake_method": stake["method"],
        "stake_note": stake["note"],
        "moves_mean": float(moves.mean()),
        "moves_sd": float(moves.std(ddof=1)) if len(moves) > 1 else 0.0,
        "seat0_score": float(np.mean(first_score)),
        "failures": fails,
    }


def _bot_tallies(games: list[dict[str, Any]], labels: list[str]) -> tuple[dict, dict, dict, dict]:
    """Each bot's record, failures and thinking time over ``games``; seat 0's score and each bot's
    scores by deal."""
    per_bot = {
        label: {
            "games": 0,
            "points": 0.0,
            "wins": 0,
            "draws": 0,
            "losses": 0,
            **dict.fromkeys(FAILURE_KINDS, 0),
            "example_failure": None,
        }
        for label in labels
    }
    timing = {label: {"seconds": 0.0, "decisions": 0, "max_seconds": 0.0} for label in labels}
    first_by_deal: dict[int, list[float]] = defaultdict(list)
    bot_units: dict[str, dict[int, list[float]]] = {label: defaultdict(list) for label in labels}
    for g in games:
        first_by_deal[g["deal"]].append(_score_of(g, g["seats"][0]))
        for seat, label in enumerate(g["seats"]):
            s = _score_of(g, label)
            bot_units[label][g["deal"]].append(s)
            bot = per_bot[label]
            bot["games"] += 1
            bot["points"] += s
            bot["wins" if s == 1.0 else "draws" if s == 0.5 else "losses"] += 1
            timing[label]["seconds"] += g.get("think_time", [0.0, 0.0])[seat]
            timing[label]["decisions"] += g.get("decisions", [0, 0])[seat]
            timing[label]["max_seconds"] = max(timing[label]["max_seconds"], g.get("max_think", [0.0, 0.0])[seat])
        if g["failure"]:
            label = g["seats"][g["failure"]["seat"]]
            per_bot[label][g["failure"]["kind"]] += 1
            if per_bot[label]["example_failure"] is None:
                per_bot[label]["example_failure"] = {"index": g["index"], **g["failure"]}
    return per_bot, timing, first_by_deal, bot_units


def summarize(
    games: list[dict[str, Any]],
    config: dict[str, Any],
    confidence: float = 0.95,
    bootstrap: int = 1000,
    bt_prior: float = 1.0,
    anchor: str | None = None,
) -> dict[str, Any]:
    """All statistics of a finished tournament from its games.jsonl objects (any order)."""
    labels = config["labels"]
    index = {label: i for i, label in enumerate(labels)}
    k = len(labels)
    unit = "deals (seat-swapped game pairs)" if config["duplicate"] else "games"
    games = sorted(games, key=lambda g: g["index"])
    by_pair: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for g in games:
        by_pair[(g["pair"][0], g["pair"][1])].append(g)

    pairs_out = []
    points = np.zeros((k, k))
    units = max(g["deal"] for g in games) + 1
    unit_points = np.zeros((units, k, k))
    for (a, b), pair_games in by_pair.items():
        pairs_out.append(_pair_row(a, b, pair_games, confidence, unit))  # sorts pair_games
        scores_a = np.array([_score_of(g, a) for g in pair_games])
        deals = np.array([g["deal"] for g in pair_games])
        ia, ib = index[a], index[b]
        points[ia, ib] += scores_a.sum()
        points[ib, ia] += len(scores_a) - scores_a.sum()
        np.add.at(unit_points[:, ia, ib], deals, scores_a)
        np.add.at(unit_points[:, ib, ia], deals, 1.0 - scores_a)

    anchor_index = None
    if anchor is not None:
        if anchor not in index:
            raise ValueError(f"--anchor {anchor!r} is not one of the bots {labels}")
        anchor_index = index[anchor]
    elo = bradley_terry(points, bt_prior, anchor_index) * ELO_PER_LOGIT
    low, high, failed = bootstrap_ratings(unit_points, bootstrap, bt_prior, anchor_index, confidence, config["seed"])

    per_bot, timing, first_by_deal, bot_units = _bot_tallies(games, labels)
    ratings, widened = [], []
    for label, i in index.items():
        bot = per_bot[label]
        unit_scores = [float(np.mean(v)) for _, v in sorted(bot_units[label].items())]
        bot_low, bot_high = float(low[i]), float(high[i])
        if i != anchor_index:  # the anchor is the scale's zero, by definition
            shift = float(np.mean(elo)) if anchor_index is not None else 0.0
            bot_low, bot_high, wider = rating_interval(bot_low, bot_high, unit_scores, k, confidence, shift)
            if wider:
                widened.append(label)
        ratings.append(
            {
                "bot": label,
                "spec": config["bot_specs"][i],
                "elo": float(elo[i]),
                "elo_low": bot_low,
                "elo_high": bot_high,
                "score": bot["points"] / bot["games"] if bot["games"] else math.nan,
                **{key: bot[key] for key in ("games", "wins", "draws", "losses", *FAILURE_KINDS)},
                "example_failure": bot["example_failure"],
            }
        )
    first = score_interval([np.mean(v) for _, v in sorted(first_by_deal.items())], confidence, unit)
    all_moves = np.array([g["moves"] for g in games], dtype=float)
    anchor_text = f"{anchor} at 0" if anchor is not None else "mean 0"
    return {
        "config": config,
        "confidence": confidence,
        "methods": {
            "score": f"Student t interval over independent {unit} (Wilson score interval when every unit "
            "scored 0 or every unit scored 1), clipped to [0, 1]",
            "stake": "RULES.md section 6 stakes (1, doubled after each draw, reset after a decided game), "
            "games of a pair as one match in deal order; regenerative ratio estimator over stake cycles "
            "(a cycle ends at each decided game, cycles treated as independent) with a delta-method t interval",
            "ratings": f"Bradley-Terry maximum likelihood (Newton), draws as half wins, {bt_prior:g} virtual "
            f"draw(s) per pair; Elo scale (400/ln 10 per logit), {anchor_text}",
            "rating_interval": f"percentile bootstrap over {units} {unit}, {bootstrap} resamples"
            + (f" ({failed} without finite ratings left out)" if failed else "")
            + (
                f"; widened to the ratings the score interval implies for {', '.join(widened)} (all their "
                f"{unit} scored the same, or fewer than {FEW_UNITS}: the score's rule)"
                if widened
                else ""
            ),
        },
        "pairs": pairs_out,
        "ratings": ratings,
        "first_player": {
            "score": first.estimate,
            "low": first.low,
            "high": first.high,
            "method": first.method,
        },
        "games": len(games),
        "moves_mean": float(all_moves.mean()),
        "draw_rate": float(np.mean([g["winner_label"] is None for g in games])),
        "timing": {
            label: {
                "ms_per_decision": 1000 * t["seconds"] / t["decisions"] if t["decisions"] else math.nan,
                **t,
            }
            for label, t in timing.items()
        },
    }
