"""The action scorer in compiled code (numba): :func:`agents.scorer.scorer.candidate_features` and
the network's forward pass for one position of an engine row, for whole compiled games of the
scorer (:mod:`agents.scorer.selfplay_kernels`) and the candidates of the search's labels
(:mod:`agents.search._search_kernels`).

A packed network (:func:`pack`) is three arrays.  ``weights``: the layers as one flat float32
array, each layer's weights ``(in, out)`` row by row, then its bias, layer after layer;
``dims``: the widths ``[in, hidden..., 1]`` and then where a deep-sets network pools (0:
nowhere); ``inputs``: where its candidate inputs come from in this version's meld feature
vector (:attr:`agents.scorer.scorer.CandidateLayout.kernel_map`: each channel's first slot, each
position input's slot, the face-up and greedy slots), so that the kernels follow the layout
(a piece added anywhere) and a scorer trained on an older layout reads its own inputs.
:func:`candidates` (the search's labels) reads this version's (:data:`INPUT_MAP`).
The first layer is split in two: the position's inputs are the same for every candidate,
so their part of the first layer is computed once per position, and a candidate's own inputs
(mostly zeros) add only their nonzero rows.  The scores equal
:meth:`agents.scorer.scorer.ActionScorer.action_scores` up to float rounding (the sums run in another
order); ``tests/test_scorer.py`` and ``tests/test_search.py`` compare the two.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from conquian_env.compiling import flush_caches, prepare_kernels, setup
from conquian_env.kernels import DISCARD, LCARDS, LMISC, OFFER, PHASE, PLAYER, lowest_bit_index

from ..greedy.greedy_kernels import NUM_FEATURES, encode_features, greedy_action
from .scorer import INPUTS, MAX_CANDIDATES

setup(__file__)  # numba's cache folder and compile notice, before any kernel is defined

_DISCARD_BASE, _TAKE, _REFUSE = 40, 80, 81
#: this version's candidate inputs in the kernels' form (:attr:`agents.scorer.scorer.CandidateLayout.kernel_map`):
#: ``[channels, position inputs, face-up slot, greedy slot, each channel's first slot..., each position slot...]``;
#: numba compiles it into the on-disk cache, :func:`_check_cache` throws a stale one away
INPUT_MAP = INPUTS.kernel_map
_FIRST = 4  # where the channels' first slots start in an input map


def pack(scorer) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(weights, dims, inputs)`` of an :class:`agents.scorer.scorer.ActionScorer` for the kernels:
    ``dims`` is ``[in, hidden..., 1, pool]``, the network's input size, the layers' output widths
    and then where the network pools (``pool_after + 1``: the ``dims`` index of the pooled layer's
    width; 0: it does not); ``inputs`` its candidate layout's
    :attr:`~agents.scorer.scorer.CandidateLayout.kernel_map`."""
    inputs = getattr(scorer, "inputs", INPUTS)
    parts, dims = [], [inputs.size]
    for w, b in scorer.layers:
        parts += [np.ascontiguousarray(w, np.float32).ravel(), np.asarray(b, np.float32)]
        dims.append(int(w.shape[1]))
    pool = getattr(scorer, "pool_after", None)
    dims.append(0 if pool is None else pool + 1)
    return np.concatenate(parts).astype(np.float32), np.array(dims, np.int64), inputs.kernel_map.copy()


@njit(cache=True, inline="always")
def position_slot(inputs):
    """The first of the position's inputs of a candidate (after the card's and the 4 kind slots)."""
    return inputs[0] * 6 + 8


@njit(cache=True, inline="always")
def _channel(F, inputs, ch, card):
    """Per-card channel ``ch`` (the layout's pieces ``NUM_CARDS`` wide, in order) of ``card``."""
    return F[inputs[_FIRST + ch] + card]


@njit(cache=True)
def _card_part(F, inputs, card, x):
    """The first ``CARD_INPUTS`` inputs of a candidate about ``card`` (see agents.scorer.scorer)."""
    channels = inputs[0]
    suit, rank = card // 10, card % 10
    for ch in range(channels):
        x[ch] = _channel(F, inputs, ch, card)
    at = channels
    for step in (-2, -1, 1, 2):
        r = rank + step
        if 0 <= r < 10:
            for ch in range(channels):
                x[at + ch] = _channel(F, inputs, ch, suit * 10 + r)
            x[at + channels] = 1.0
        else:
            for ch in range(channels + 1):
                x[at + ch] = 0.0
        at += channels + 1
    for ch in range(channels):
        s = np.float32(0.0)  # the rank's four cards less this one (as agents.scorer.scorer sums them)
        for other in range(4):
            s += _channel(F, inputs, ch, other * 10 + rank)
        x[at + ch] = s - _channel(F, inputs, ch, card)


@njit(cache=True)
def candidates(F, phase, lcards, misc, X, acts):
    """:func:`candidates_of` with this version's candidate inputs (:data:`INPUT_MAP`)."""
    return candidates_of(F, phase, lcards, misc, X, acts, INPUT_MAP)


@njit(cache=True)
def candidates_of(F, phase, lcards, misc, X, acts, inputs):
    """The candidates of one position into ``X`` (``(MAX_CANDIDATES, n)``, ``n`` at least the
    candidate size) and ``acts``, in :func:`agents.scorer.scorer.candidate_features`' order
    (discards by card, take, refusal); ``F`` its meld features, ``phase, lcards, misc`` its
    legal-move columns, ``inputs`` the scorer's input map (:func:`pack`); returns how many."""
    kind = inputs[0] * 6 + 4
    face_up, greedy, positions = inputs[2], inputs[3], inputs[1]
    first_position = _FIRST + inputs[0]
    n = 0
    if phase == DISCARD:
        cards = lcards
        while cards:
            low = cards & -cards
            cards ^= low
            c = lowest_bit_index(low)
            X[n, :] = 0.0
            _card_part(F, inputs, c, X[n])
            X[n, kind] = 1.0
            acts[n] = _DISCARD_BASE + c
            n += 1
    if misc & 1:  # take
        face, best = 0, F[face_up]
        for c in range(1, 40):
            if F[face_up + c] > best:
                face, best = c, F[face_up + c]
        X[n, :] = 0.0
        _card_part(F, inputs, face, X[n])
        X[n, kind + 1] = 1.0
        acts[n] = _TAKE
        n += 1
    if misc & 2:  # refuse
        X[n, :] = 0.0
        X[n, kind + 2] = 1.0
        acts[n] = _REFUSE
        n += 1
    for k in range(n):
        X[k, kind + 3] = F[greedy + acts[k]]
        at = kind + 4
        for j in range(positions):
            X[k, at + j] = F[inputs[first_position + j]]
    return n


@njit(cache=True)
def scores(weights, dims, inputs, X, n, out, H, g):
    """The network's score of each of the ``n`` candidates in ``X`` into ``out``; ``H, g``: scratch
    (:func:`scratch`): a row per candidate and a row, three times the widest layer wide.  Layer by
    layer over all the candidates, so that a pooled layer (``dims[-1]``) can join each candidate's
    outputs by their mean and maximum over the ``n`` candidates; ``inputs``: the network's input map
    (:func:`pack`), where the position's inputs start."""
    split = position_slot(inputs)
    last = dims.shape[0] - 1  # dims[last]: the pool marker; dims[1 .. last - 1]: the layers' widths
    pool = dims[last]
    width = dims[1]
    # the position's part of the first layer, once: bias + position inputs (the same for all)
    b0 = dims[0] * width
    for o in range(width):
        g[o] = weights[b0 + o]
    for j in range(split, dims[0]):
        v = X[0, j]
        if v != 0.0:
            row = j * width
            for o in range(width):
                g[o] += v * weights[row + o]
    for k in range(n):
        h = H[k]
        for o in range(width):
            h[o] = g[o]
        for j in range(split):
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
def scorer_action(S, i, weights, dims, inputs, F, X, acts, out, H, g):
    """The scorer bot's move in row ``i`` (:class:`agents.scorer.scorer.ScorerAgent`): at an offer or a
    discard with a choice the best-scored candidate (ties: the lowest action id), elsewhere
    greedy's move; ``weights, dims, inputs``: the packed network (:func:`pack`); ``F, X, acts,
    out, h, g`` are scratch arrays (:func:`scratch`)."""
    if not has_choice(S, i):
        return greedy_action(S, i)
    encode_features(S, i, S[i, PLAYER], F)
    n = candidates_of(F, S[i, PHASE], S[i, LCARDS], S[i, LMISC], X, acts, inputs)
    scores(weights, dims, inputs, X, n, out, H, g)
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
    return (np.zeros(NUM_FEATURES, np.float32), np.zeros((MAX_CANDIDATES, int(dims[0])), np.float32),
            np.zeros(MAX_CANDIDATES, np.int64), np.zeros(MAX_CANDIDATES, np.float32),
            np.zeros((MAX_CANDIDATES, wide), np.float32), np.zeros(wide, np.float32))  # fmt: skip


def network(scorer) -> tuple[np.ndarray, ...]:
    """The packed ``scorer`` and its scratch: the arguments of :func:`scorer_action` after the row."""
    weights, dims, inputs = pack(scorer)
    return (weights, dims, inputs, *scratch(dims))


@njit(cache=True)
def _baked():
    """The input map as compiled into the on-disk cache (see :func:`_check_cache`)."""
    return INPUT_MAP.copy()


def _check_cache() -> None:
    """numba's cache keeps the globals a kernel was compiled with and is invalidated only when
    this file changes; if the layout changed :data:`INPUT_MAP` since (a piece added to the meld
    features or the observation), empty every kernel's cache index here so that each compiles afresh."""
    if np.array_equal(_baked(), INPUT_MAP):
        return
    flush_caches(globals())
    _baked.recompile()  # the check itself ran the stale cached code in this process


prepare_kernels(globals())
_check_cache()
