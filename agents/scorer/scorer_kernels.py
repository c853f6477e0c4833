"""The action scorer in compiled code (numba): :func:`agents.scorer.scorer.candidate_features` and
the network's forward pass for one position of an engine row, for whole compiled games of the
scorer (:mod:`agents.scorer.selfplay_kernels`) and the candidates of the search's labels
(:mod:`agents.search._search_kernels`).

The network's layers travel as one flat float32 array (:func:`pack`): each layer's weights
``(in, out)`` row by row, then its bias, layer after layer; ``dims`` holds the widths
``[CANDIDATE_SIZE, hidden..., 1]`` and then where a deep-sets network pools (0: nowhere).
The first layer is split in two: the position's 60 inputs are the same for every candidate,
so their part of the first layer is computed once per position, and a candidate's own inputs
(mostly zeros) add only their nonzero rows.  The scores equal
:meth:`agents.scorer.scorer.ActionScorer.action_scores` up to float rounding (the sums run in another
order); ``tests/test_scorer.py`` and ``tests/test_search.py`` compare the two.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from conquian_env.compiling import prepare_kernels, setup
from conquian_env.kernels import DISCARD, LCARDS, LMISC, OFFER, PHASE, PLAYER, lowest_bit_index
from conquian_env.observation import OBS_AT

from ..greedy.greedy_kernels import NUM_FEATURES, encode_features, greedy_action
from .scorer import (
    CANDIDATE_SIZE,
    CARD_BLOCKS,
    CHANNELS,
    FEATURE_AT,
    KIND_SLOT,
    MAX_CANDIDATES,
    POSITION_SLICES,
    POSITION_SLOT,
)

setup(__file__)  # numba's cache folder and compile notice, before any kernel is defined

_DISCARD_BASE, _TAKE, _REFUSE = 40, 80, 81
_FACE_UP = OBS_AT["face_up"]
_GREEDY = FEATURE_AT["greedy_action"]
_LIVE = FEATURE_AT["live"]  # the first of the 8 meld-feature card blocks (live .. lay_plan, contiguous)
(_P0, _P1), (_P2, _P3) = POSITION_SLICES
_N_POS = CANDIDATE_SIZE - POSITION_SLOT


def pack(scorer) -> tuple[np.ndarray, np.ndarray]:
    """``(weights, dims)`` of an :class:`agents.scorer.scorer.ActionScorer` for the kernels: ``dims`` is
    ``[CANDIDATE_SIZE, hidden..., 1, pool]``, the layers' output widths and then where the network
    pools (``pool_after + 1``: the ``dims`` index of the pooled layer's width; 0: it does not)."""
    parts, dims = [], [CANDIDATE_SIZE]
    for w, b in scorer.layers:
        parts += [np.ascontiguousarray(w, np.float32).ravel(), np.asarray(b, np.float32)]
        dims.append(int(w.shape[1]))
    pool = getattr(scorer, "pool_after", None)
    dims.append(0 if pool is None else pool + 1)
    return np.concatenate(parts).astype(np.float32), np.array(dims, np.int64)


@njit(cache=True, inline="always")
def _channel(F, ch, card):
    """Per-card channel ``ch`` (the 10 raw blocks, then the 8 meld-feature blocks) of ``card``."""
    if ch < CARD_BLOCKS:
        return F[ch * 40 + card]
    return F[_LIVE + (ch - CARD_BLOCKS) * 40 + card]


@njit(cache=True)
def _card_part(F, card, x):
    """The first ``CARD_INPUTS`` inputs of a candidate about ``card`` (see agents.scorer.scorer)."""
    suit, rank = card // 10, card % 10
    for ch in range(CHANNELS):
        x[ch] = _channel(F, ch, card)
    at = CHANNELS
    for step in (-2, -1, 1, 2):
        r = rank + step
        if 0 <= r < 10:
            for ch in range(CHANNELS):
                x[at + ch] = _channel(F, ch, suit * 10 + r)
            x[at + CHANNELS] = 1.0
        else:
            for ch in range(CHANNELS + 1):
                x[at + ch] = 0.0
        at += CHANNELS + 1
    for ch in range(CHANNELS):
        s = np.float32(0.0)  # the rank's four cards less this one (as agents.scorer.scorer sums them)
        for other in range(4):
            s += _channel(F, ch, other * 10 + rank)
        x[at + ch] = s - _channel(F, ch, card)


@njit(cache=True)
def candidates(F, phase, lcards, misc, X, acts):
    """The candidates of one position into ``X`` (``(MAX_CANDIDATES, CANDIDATE_SIZE)``) and
    ``acts``, in :func:`agents.scorer.scorer.candidate_features`' order (discards by card, take,
    refusal); ``F`` its meld features, ``phase, lcards, misc`` its legal-move columns; returns
    how many."""
    n = 0
    if phase == DISCARD:
        cards = lcards
        while cards:
            low = cards & -cards
            cards ^= low
            c = lowest_bit_index(low)
            X[n, :] = 0.0
            _card_part(F, c, X[n])
            X[n, KIND_SLOT] = 1.0
            acts[n] = _DISCARD_BASE + c
            n += 1
    if misc & 1:  # take
        face, best = 0, F[_FACE_UP]
        for c in range(1, 40):
            if F[_FACE_UP + c] > best:
                face, best = c, F[_FACE_UP + c]
        X[n, :] = 0.0
        _card_part(F, face, X[n])
        X[n, KIND_SLOT + 1] = 1.0
        acts[n] = _TAKE
        n += 1
    if misc & 2:  # refuse
        X[n, :] = 0.0
        X[n, KIND_SLOT + 2] = 1.0
        acts[n] = _REFUSE
        n += 1
    for k in range(n):
        X[k, KIND_SLOT + 3] = F[_GREEDY + acts[k]]
        at = POSITION_SLOT
        for j in range(_P0, _P1):
            X[k, at] = F[j]
            at += 1
        for j in range(_P2, _P3):
            X[k, at] = F[j]
            at += 1
    return n


@njit(cache=True)
def scores(weights, dims, X, n, out, H, g):
    """The network's score of each of the ``n`` candidates in ``X`` into ``out``; ``H, g``: scratch
    (:func:`scratch`): a row per candidate and a row, three times the widest layer wide.  Layer by
    layer over all the candidates, so that a pooled layer (``dims[-1]``) can join each candidate's
    outputs by their mean and maximum over the ``n`` candidates."""
    last = dims.shape[0] - 1  # dims[last]: the pool marker; dims[1 .. last - 1]: the layers' widths
    pool = dims[last]
    width = dims[1]
    # the position's part of the first layer, once: bias + position inputs (the same for all)
    b0 = dims[0] * width
    for o in range(width):
        g[o] = weights[b0 + o]
    for j in range(POSITION_SLOT, dims[0]):
        v = X[0, j]
        if v != 0.0:
            row = j * width
            for o in range(width):
                g[o] += v * weights[row + o]
    for k in range(n):
        h = H[k]
        for o in range(width):
            h[o] = g[o]
        for j in range(POSITION_SLOT):
            v = X[k, j]
            if v != 0.0:
                row = j * width
                for o in range(width):
                    h[o] += v * weights[row + o]
    at = b0 + width  # the next layer's weights
    w_in = width
    for layer in range(2, last):
        for k in range(n):  # ReLU on the layer before
            h = H[k]
            for o in range(w_in):
                if h[o] < 0.0:
                    h[o] = 0.0
        w_out = dims[layer]
        if layer - 1 == pool:
            # [h, mean, max] over the candidates: the mean's and the max's part of this layer is the
            # same for every candidate, computed once into g (with the bias); each candidate adds
            # its own h's part in H[k, w_in : w_in + w_out], then moves it to the row's front
            bias = at + 3 * w_in * w_out
            for o in range(w_out):
                g[o] = weights[bias + o]
            for j in range(w_in):
                s, top = np.float32(0.0), np.float32(0.0)  # h >= 0 after the ReLU
                for k in range(n):
                    v = H[k, j]
                    s += v
                    if v > top:
                        top = v
                mean = s / n
                if mean != 0.0:
                    row = at + (w_in + j) * w_out
                    for o in range(w_out):
                        g[o] += mean * weights[row + o]
                if top != 0.0:
                    row = at + (2 * w_in + j) * w_out
                    for o in range(w_out):
                        g[o] += top * weights[row + o]
            for k in range(n):
                h = H[k]
                for o in range(w_out):
                    h[w_in + o] = g[o]
                for j in range(w_in):
                    v = h[j]
                    if v != 0.0:
                        row = at + j * w_out
                        for o in range(w_out):
                            h[w_in + o] += v * weights[row + o]
                for o in range(w_out):  # forward: the source lies after the destination
                    h[o] = h[w_in + o]
            at = bias + w_out
            w_in = w_out
            continue
        bias = at + w_in * w_out
        for k in range(n):
            h = H[k]
            for o in range(w_out):
                g[o] = weights[bias + o]
            for j in range(w_in):
                v = h[j]
                if v != 0.0:
                    row = at + j * w_out
                    for o in range(w_out):
                        g[o] += v * weights[row + o]
            for o in range(w_out):
                h[o] = g[o]
        at = bias + w_out
        w_in = w_out
    for k in range(n):
        out[k] = H[k, 0]


@njit(cache=True, inline="always")
def has_choice(S, i):
    """Whether row ``i``'s player has a decision the scorer makes: an offer it may take or refuse,
    or a discard among two cards or more (every other move is greedy's)."""
    phase = S[i, PHASE]
    if phase == DISCARD:
        lcards = S[i, LCARDS]
        return lcards & (lcards - 1) != 0
    if phase == OFFER:
        return S[i, LMISC] & 3 == 3
    return False


@njit(cache=True)
def scorer_action(S, i, weights, dims, F, X, acts, out, H, g):
    """The scorer bot's move in row ``i`` (:class:`agents.scorer.scorer.ScorerAgent`): at an offer or a
    discard with a choice the best-scored candidate (ties: the lowest action id), elsewhere
    greedy's move; ``F, X, acts, out, h, g`` are scratch arrays (:func:`scratch`)."""
    if not has_choice(S, i):
        return greedy_action(S, i)
    encode_features(S, i, S[i, PLAYER], F)
    n = candidates(F, S[i, PHASE], S[i, LCARDS], S[i, LMISC], X, acts)
    scores(weights, dims, X, n, out, H, g)
    return acts[best_candidate(out, acts, n)]


@njit(cache=True, inline="always")
def best_candidate(out, acts, n):
    """The index of the best-scored of the ``n`` candidates: ties to the lowest action id, NaN
    below everything (agents.model_files.best_legal's rule)."""
    best, top = 0, out[0] if out[0] == out[0] else -np.inf
    for k in range(1, n):
        v = out[k] if out[k] == out[k] else -np.inf
        if v > top or (v == top and acts[k] < acts[best]):
            best, top = k, v
    return best


def scratch(dims: np.ndarray) -> tuple[np.ndarray, ...]:
    """The scratch arrays :func:`scorer_action` takes: ``(F, X, acts, out, H, g)``."""
    wide = 3 * int(max(dims[1:-1]))  # a pooled layer's [h, mean, max]
    return (np.zeros(NUM_FEATURES, np.float32), np.zeros((MAX_CANDIDATES, CANDIDATE_SIZE), np.float32),
            np.zeros(MAX_CANDIDATES, np.int64), np.zeros(MAX_CANDIDATES, np.float32),
            np.zeros((MAX_CANDIDATES, wide), np.float32), np.zeros(wide, np.float32))  # fmt: skip


def network(scorer) -> tuple[np.ndarray, ...]:
    """The packed ``scorer`` and its scratch: the arguments of :func:`scorer_action` after the row."""
    weights, dims = pack(scorer)
    return (weights, dims, *scratch(dims))


prepare_kernels(globals())
