"""The greedy bot (:class:`agents.greedy.GreedyAgent`) as a pure JAX function of one game's state.

:func:`greedy_action` is ``GreedyAgent.choose`` for the player to move, decision for
decision (``tests/test_jax.py`` compares them on thousands of positions and whole games):
no Python control flow on traced values, so ``jax.vmap`` batches it and ``jax.jit``
compiles it, for example as the opponent of a learner inside one jitted training loop.
It reads only what the mover sees.  Like the compiled twin :mod:`agents._greedy_kernels`
it keeps no state: in the meld phase it recomputes the take's lay-down plan (and re-plans
from the cards chosen when they left it), which is the agent's own plan whenever the meld
so far followed it (always, when the bot made the meld).

Exact floats.  The greedy evaluation sums weights such as 0.3 and 0.06 in ``float64`` and
breaks ties by the first candidate of highest value, so the rounding of those sums decides
some choices.  The evaluation here runs in ``float64`` too (in a scoped
``jax.enable_x64``: the caller's dtypes are untouched), summing in the same order.
Accelerators without ``float64`` (TPUs) cannot run it exactly.

Cheaper than the fixed worst case.  A take is planned over up to 177 candidate lays, each
followed by a discard search over up to ten discards whose evaluation asks meld questions
(a card's quality, the winning cards of a ready hand).  Three things keep the work small:

* Lay-independent parts are computed once: every hand+meld pool after a discard is the
  same for every lay (the player's cards and the face-up card, less the discard), so the
  winning cards of each discard (``can_split(pool - d + x)`` for every card ``x``) are one
  table of at most 440 questions for the whole decision, not one per lay.
* Every meld question first passes a cheap necessary test (each card lies in a block of
  three consecutive ranks of its suit or at a rank with three cards; about twenty bit
  operations); only the questions that pass go to the full search
  (:func:`conquian_env.jax.melds.meld_search`, 72 set choices), compacted into chunks of
  ``CHUNK`` and run by a ``lax.while_loop`` until none is left.  Most questions fail the
  test (a ten-card pool with a loose card cannot split whatever one card is added).
* The lays are compacted the same way: only the lays whose meld splits are evaluated,
  in greedy's order, ``LAY_CHUNK`` at a time in a ``lax.while_loop``.

Under ``vmap`` a ``while_loop`` runs until the busiest game of the batch is done, so a
batch costs its hardest position, not the worst case of the rules.
"""

from __future__ import annotations

from itertools import combinations

import jax
import jax.numpy as jnp
import numpy as np

from .. import actions as _actions
from .game import DISCARD, FORCE_DECISION, GAME_OVER, MELD, OFFER, TURNED, State, _row
from .melds import _RANKS, can_split, card_words, count, long_blocks, meld_search, words_to_bools

TAKE, REFUSE, FINISH, FORCE, NO_FORCE = (
    _actions.TAKE,
    _actions.REFUSE,
    _actions.FINISH,
    _actions.FORCE,
    _actions.NO_FORCE,
)
DISCARD_BASE = _actions.DISCARD_BASE

#: meld questions sent to the full search at once (see the module docstring)
CHUNK = 8
#: lays evaluated at once
LAY_CHUNK = 2
#: hand slots (a hand holds at most ten cards)
SLOTS = 10
_WORD = 0xFFFFF


#: the greedy bot's weights (agents.greedy; conquian_env sits below agents, so they are
#: stated again here and ``tests/test_jax.py`` checks that they are the same)
PARTIAL_WEIGHT = 0.3
DISTANT_WEIGHT = 0.06
READY_BONUS = 2.0
OUT_WEIGHT = 0.5
FEED_PENALTY = 0.7
FEED_PENALTY_NEAR_OUT = 6.0
FORCE_MIN_HAND = 2
LAY_COST = 1e-3
MAX_FULL_ENUM = 7


def partner_masks() -> list[list[int]]:
    """For each card, the two-card masks completing every 3-card set or run holding it, in
    greedy's order (``agents.greedy._PARTNERS``): the set pairs, then the runs from low to high."""
    table = []
    for card in range(40):
        suit, rank = divmod(card, 10)
        others = [s for s in range(4) if s != suit]
        pairs = [1 << (a * 10 + rank) | 1 << (b * 10 + rank) for a, b in combinations(others, 2)]
        for lo in (rank - 2, rank - 1, rank):
            if 0 <= lo and lo + 2 < 10:
                pairs.append(sum(1 << (suit * 10 + r) for r in range(lo, lo + 3)) & ~(1 << card))
        table.append(pairs)
    return table


def lay_orders() -> list[list[int]]:
    """For each number n of playable hand cards (0..10), greedy.plan_take's candidate lays as
    position masks (bit b = the b-th playable card in card order): by size, then in binary
    counting order; above ``MAX_FULL_ENUM`` cards only those of at most three cards, then all."""
    rows = []
    for n in range(SLOTS + 1):
        js = sorted(range(1 << n), key=lambda j: (bin(j).count("1"), j))
        if n > MAX_FULL_ENUM:
            js = [j for j in js if bin(j).count("1") <= 3] + [(1 << n) - 1]
        rows.append(js)
    return rows


def _tables() -> dict[str, np.ndarray]:
    partners = partner_masks()
    nb = np.zeros((40, 2), np.uint32)
    part = np.zeros((40, 6, 2), np.uint32)
    part_ok = np.zeros((40, 6), bool)
    for c in range(40):
        near = 0
        for k, m in enumerate(partners[c]):
            part[c, k] = (m & _WORD, m >> 20)
            part_ok[c, k] = True
            near |= m
        nb[c] = (near & _WORD, near >> 20)
    rows = lay_orders()
    width = max(len(r) for r in rows)  # 177: n = 10, the subsets of at most three cards, then all
    lays = np.zeros((SLOTS + 1, width), np.int32)
    lay_ok = np.zeros((SLOTS + 1, width), bool)
    for n, js in enumerate(rows):
        lays[n, : len(js)] = js
        lay_ok[n, : len(js)] = True
    return {"nb": nb, "part": part, "part_ok": part_ok, "lays": lays, "lay_ok": lay_ok}


_T: dict | None = None


def _t() -> dict:
    global _T
    if _T is None:
        _T = _tables()
    return _T


# ---------------------------------------------------------------- card-set helpers
def _to_words(bools: jax.Array) -> jax.Array:
    """A ``(..., 40)`` bool vector as ``(..., 2)`` words."""
    b = bools.reshape(bools.shape[:-1] + (2, 20)).astype(jnp.uint32)
    return jnp.sum(b << jnp.arange(20, dtype=jnp.uint32), axis=-1, dtype=jnp.uint32)


def _any(words: jax.Array) -> jax.Array:
    return jnp.any(words != 0, axis=-1)


def _maybe_splits(words: jax.Array) -> jax.Array:
    """A necessary condition of ``can_split``: every card lies in a block of three
    consecutive ranks of its suit or at a rank holding three cards or more."""
    w0, w1 = words[..., 0], words[..., 1]
    a0, a1, a2, a3 = w0 & _RANKS, w0 >> 10, w1 & _RANKS, w1 >> 10
    r3 = (a0 & a1 & (a2 | a3)) | ((a0 | a1) & a2 & a3)
    sets = r3 | (r3 << 10)
    runs = long_blocks(words)
    return ((w0 & ~(runs[..., 0] | sets)) | (w1 & ~(runs[..., 1] | sets))) == 0


def _split_many(queries: jax.Array, needed: jax.Array, chunk: int = CHUNK) -> jax.Array:
    """``can_split`` of each of ``queries`` (``(Q, 2)`` words) where ``needed``, False elsewhere.

    The cheap test first; the questions that pass it are compacted (in order) and searched
    ``chunk`` at a time in a ``while_loop`` until none is left.
    """
    q = queries.shape[0]
    todo = needed & _maybe_splits(queries)
    total = jnp.sum(todo, dtype=jnp.int32)
    pad = -(-q // chunk) * chunk
    pos = jnp.cumsum(todo, dtype=jnp.int32) - 1
    order = jnp.full(pad, q, jnp.int32).at[jnp.where(todo, pos, pad)].set(jnp.arange(q, dtype=jnp.int32), mode="drop")
    rows = jnp.concatenate([queries, jnp.zeros((1, 2), jnp.uint32)])

    def body(carry):
        i, out = carry
        idx = jax.lax.dynamic_slice(order, (i * chunk,), (chunk,))
        ok = jax.vmap(can_split)(rows[idx])
        return i + 1, out.at[idx].max(ok.astype(jnp.int8), mode="drop")

    _, out = jax.lax.while_loop(lambda c: c[0] * chunk < total, body, (jnp.int32(0), jnp.zeros(q + 1, jnp.int8)))
    return out[:q] > 0


# ---------------------------------------------------------------- the evaluation (agents.greedy)
class _Ctx:
    """What every evaluation of one decision shares (lay-independent)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _evaluate(ctx: _Ctx, meld: jax.Array, hand: jax.Array, use_none: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``greedy.choose_discard(hand, meld, ...)`` (``use_none`` False) or
    ``greedy.position_value(hand, meld, live)`` (True): ``(discard card or -1, value)``."""
    t = ctx.t
    f64 = jnp.float64
    cw = ctx.slot_words  # (10, 2)
    active = ctx.slot_valid & _any(cw & hand)  # (10,)
    nb = ctx.slot_nb  # (10, 2)
    pm = ctx.slot_part  # (10, 6, 2)
    pm_ok = ctx.slot_part_ok  # (10, 6)
    # meld questions of this meld: the card fits it alone, the card and a partner pair fit it
    fit_q = meld | cw
    fit_need = active & _any(meld & nb)
    s_q = meld[None, None] | cw[:, None] | pm
    s_need = active[:, None] & pm_ok & _any(pm & meld)
    ok = _split_many(jnp.concatenate([fit_q, s_q.reshape(-1, 2)]), jnp.concatenate([fit_need, s_need.reshape(-1)]))
    fit = ok[:SLOTS]
    split3 = ok[SLOTS:].reshape(SLOTS, 6)
    pool = hand | meld
    # the options: discard slot e (0..9), or no discard (10)
    e_words = jnp.concatenate([cw, jnp.zeros((1, 2), jnp.uint32)])  # (11, 2)
    e_active = jnp.concatenate([active & ~use_none, use_none[None]])
    pool_e = pool & ~e_words  # (11, 2)
    held = pool_e[:, None] & ~cw[None]  # (11, 10, 2): held cards other than card j
    have = pm[None] & held[:, :, None]  # (11, 10, 6, 2)
    full = jnp.all(have == pm[None], axis=-1) & pm_ok[None]
    in_meld = _any(pm & meld)[None]  # (1, 10, 6)
    ret = full & (~in_meld | split3[None])
    gone = ~full & _any(pm[None] & ~held[:, :, None] & ~ctx.live)
    have_any = _any(have)
    have_in_meld = _any(have & meld)
    partial = jnp.where(~have_in_meld | split3[None], f64(PARTIAL_WEIGHT), f64(0.0))
    inc = jnp.where(pm_ok[None] & ~full & ~gone, jnp.where(have_any, partial, f64(DISTANT_WEIGHT)), f64(0.0))
    q = jnp.zeros(inc.shape[:2], f64)
    for k in range(6):  # in greedy's partner order
        q = q + inc[:, :, k]
    q = jnp.where(q < 1.0, q, f64(1.0))
    q = jnp.where(fit[None] | jnp.any(ret, axis=-1), f64(1.0), q)  # (11, 10)
    card_active = active[None] & (jnp.arange(11)[:, None] != jnp.arange(SLOTS)[None])
    value = jnp.broadcast_to(count(meld).astype(f64), (11,))
    for j in range(SLOTS):  # in card order
        value = value + jnp.where(card_active[:, j], q[:, j], f64(0.0))
    hopeless = jnp.any(card_active & (q == 0.0), axis=-1)
    incomplete = card_active & (q < 1.0)
    ones = jnp.full((2,), _WORD, jnp.uint32)
    cand = jax.lax.reduce(
        jnp.where(incomplete[..., None], nb[None], ones), jnp.uint32(_WORD), jax.lax.bitwise_and, (1,)
    )  # (11, 2)
    near = jax.lax.reduce(
        jnp.where(words_to_bools(pool_e)[..., None], t["nb"][None], jnp.uint32(0)),
        jnp.uint32(0),
        jax.lax.bitwise_or,
        (1,),
    )
    cand = jnp.where(jnp.any(incomplete, axis=-1)[:, None], cand, near)
    outs = count(ctx.wins & cand & ctx.live & ~pool_e)  # (11,)
    value = jnp.where(~hopeless & (outs > 0), value + (f64(READY_BONUS) + f64(OUT_WEIGHT) * outs.astype(f64)), value)
    value = value - jnp.concatenate([ctx.feed_slot, jnp.zeros(1, f64)])
    # greedy.choose_discard: the first card of highest value, from -1e9
    best_card, best_value = jnp.int32(-1), f64(-1e9)
    for e in range(SLOTS):
        better = e_active[e] & (value[e] > best_value)
        best_card = jnp.where(better, ctx.slot_card[e], best_card)
        best_value = jnp.where(better, value[e], best_value)
    return jnp.where(use_none, jnp.int32(-1), best_card), jnp.where(use_none, value[SLOTS], best_value)


def _plan(ctx: _Ctx, base: jax.Array, rest: jax.Array, enum: jax.Array, use_none: jax.Array):
    """``greedy.plan_take(hand, meld, card, chosen, ...)`` as ``(lay, discard, value)`` with
    ``base = meld | card | chosen`` and ``rest = hand - chosen`` when ``enum``; otherwise the
    evaluation of ``(hand=rest, meld=base)`` alone (:func:`_evaluate`)."""
    t = ctx.t
    f64 = jnp.float64
    out, playable, _ = meld_search(base, rest)
    goes_out = enum & can_split(base | rest)
    playable = jnp.where(enum, playable, jnp.zeros(2, jnp.uint32))
    n = count(playable)
    pb = words_to_bools(playable)
    rank = jnp.clip(jnp.cumsum(pb, dtype=jnp.int32) - 1, 0, SLOTS - 1)
    js = jnp.asarray(t["lays"])[n]  # (K,)
    lay_ok = jnp.asarray(t["lay_ok"])[n]
    lays = _to_words(pb[None] & ((js[:, None] >> rank[None]) & 1).astype(bool))  # (K, 2)
    k_all = lays.shape[0]
    splits = _split_many(base | lays, lay_ok)
    # not enumerating: the empty lay only, evaluated whether or not base splits
    valid = jnp.where(enum, splits & ~goes_out, jnp.arange(k_all) == 0)
    total = jnp.sum(valid, dtype=jnp.int32)
    pad = -(-k_all // LAY_CHUNK) * LAY_CHUNK
    pos = jnp.cumsum(valid, dtype=jnp.int32) - 1
    order = (
        jnp.full(pad, k_all, jnp.int32)
        .at[jnp.where(valid, pos, pad)]
        .set(jnp.arange(k_all, dtype=jnp.int32), mode="drop")
    )
    lays_p = jnp.concatenate([lays, jnp.zeros((1, 2), jnp.uint32)])
    sizes = count(lays_p)

    def body(carry):
        i, best_lay, best_discard, best_value = carry
        idx = jax.lax.dynamic_slice(order, (i * LAY_CHUNK,), (LAY_CHUNK,))
        lay = lays_p[idx]
        discard, value = jax.vmap(lambda m, h: _evaluate(ctx, m, h, use_none))(base | lay, rest & ~lay)
        value = value - f64(LAY_COST) * sizes[idx].astype(f64)
        for k in range(LAY_CHUNK):  # greedy's order: the first of highest value
            better = (i * LAY_CHUNK + k < total) & (value[k] > best_value)
            best_lay = jnp.where(better, lay[k], best_lay)
            best_discard = jnp.where(better, discard[k], best_discard)
            best_value = jnp.where(better, value[k], best_value)
        return i + 1, best_lay, best_discard, best_value

    start = (jnp.int32(0), jnp.zeros(2, jnp.uint32), jnp.int32(-1), f64(-jnp.inf))
    _, lay, discard, value = jax.lax.while_loop(lambda c: c[0] * LAY_CHUNK < total, body, start)
    del out
    return (
        jnp.where(goes_out, rest, lay),
        jnp.where(goes_out, jnp.int32(-1), discard),
        jnp.where(goes_out, f64(jnp.inf), value),
    )


def _feed(t: dict, cards_words: jax.Array, opp_meld: jax.Array, opp_size: jax.Array, cards_nb: jax.Array) -> jax.Array:
    """``greedy.feed_penalty`` of each card of ``cards_words`` (``(k, 2)``)."""
    fits = _split_many(opp_meld | cards_words, _any(opp_meld & cards_nb) & _any(cards_words))
    penalty = jnp.where(opp_size <= 1, jnp.float64(FEED_PENALTY_NEAR_OUT), jnp.float64(FEED_PENALTY))
    return jnp.where(fits, penalty, jnp.float64(0.0))


def _highest(bools: jax.Array) -> jax.Array:
    """Index of the last True (-1 if none); min/max reductions, no argmax (whose cached
    lowering does not survive the scoped ``enable_x64``)."""
    return jnp.max(jnp.where(bools, jnp.arange(bools.shape[-1], dtype=jnp.int32), jnp.int32(-1)))


def _lowest(bools: jax.Array) -> jax.Array:
    n = bools.shape[-1]
    return jnp.min(jnp.where(bools, jnp.arange(n, dtype=jnp.int32), jnp.int32(n)))


def greedy_action(state: State) -> jax.Array:
    """``GreedyAgent.choose`` for the player to move in one (un-batched) state: an int32
    action id, -1 once the game is over.  ``jax.vmap`` it for a batch; ``jax.jit`` it."""
    with jax.enable_x64(True):
        return _greedy_action(state).astype(jnp.int32)


def _greedy_action(state: State) -> jax.Array:
    t = _t()
    f64 = jnp.float64
    p = state.current_player
    hand, meld = _row(state._hands, p), _row(state._melds, p)
    opp_meld, opp_size = _row(state._melds, 1 - p), count(_row(state._hands, 1 - p))
    face = card_words(state._face)
    chosen = state._chosen
    full = jnp.full(2, _WORD, jnp.uint32)
    live = full & ~(hand | state._melds[0] | state._melds[1] | state._dead | chosen | face)
    phase = state._phase
    mask = state.legal_action_mask
    # hand slots: the hand's cards in card order
    hb = words_to_bools(hand)
    slot_card = jnp.argsort(~hb, stable=True)[:SLOTS].astype(jnp.int32)
    slot_valid = jnp.arange(SLOTS) < count(hand)
    slot_words = jnp.where(slot_valid[:, None], card_words(slot_card), jnp.uint32(0))
    nb_t, part_t, part_ok_t = jnp.asarray(t["nb"]), jnp.asarray(t["part"]), jnp.asarray(t["part_ok"])
    slot_nb = nb_t[slot_card]
    # winning cards after each discard (the pool is the same for every lay) and of the hand kept
    pool = hand | meld | face
    r = jnp.concatenate([pool & ~slot_words, (hand | meld)[None]])  # (11, 2)
    xs = card_words(jnp.arange(40))
    live_b = words_to_bools(live)
    win_q = r[:, None] | xs[None]
    win_need = (live_b[None] & ~words_to_bools(r)) & jnp.concatenate([slot_valid, jnp.ones(1, bool)])[:, None]
    wins = _to_words(_split_many(win_q.reshape(-1, 2), win_need.reshape(-1)).reshape(11, 40))
    feed = _feed(
        t,
        jnp.concatenate([slot_words, face[None]]),
        opp_meld,
        opp_size,
        jnp.concatenate([slot_nb, nb_t[jnp.maximum(state._face, 0)][None]]),
    )
    ctx = _Ctx(
        t=t,
        live=live,
        slot_card=slot_card,
        slot_valid=slot_valid,
        slot_words=slot_words,
        slot_nb=slot_nb,
        slot_part=part_t[slot_card],
        slot_part_ok=part_ok_t[slot_card] & slot_valid[:, None],
        wins=wins,
        feed_slot=feed[:SLOTS],
    )
    is_meld, is_discard = phase == MELD, phase == DISCARD
    # two searches, traced once (vmapped over a pair): the take's plan (offer, meld) or the
    # discard (discard phase); and the re-plan from the cards chosen (meld) or the value of
    # keeping the hand (offer)
    bases = jnp.stack([meld | face, jnp.where(is_meld, meld | face | chosen, meld)])
    rests = jnp.stack([hand, jnp.where(is_meld, hand & ~chosen, hand)])
    enums = jnp.stack([~is_discard, is_meld])
    lays, discards, values = jax.vmap(lambda b, r, e, u: _plan(ctx, b, r, e, u))(
        bases, rests, enums, jnp.stack([jnp.bool_(False), ~is_meld])
    )
    lay0, discard0, value0 = lays[0], discards[0], values[0]
    lay1, keep = lays[1], values[1]
    # offer: take when the plan is at least as good as keeping (greedy.take_margin)
    passes = (state._source == TURNED) & (state._owner == p) & ~state._passed
    keep = jnp.where(passes, keep - feed[SLOTS], keep)
    offer = jnp.where(mask[TAKE] & (value0 - keep >= 0), TAKE, REFUSE)
    # meld: replay the plan, highest card first, then finish
    plan = jnp.where(_any(chosen & ~lay0), lay1 | chosen, lay0)
    todo = words_to_bools(plan & ~chosen) & mask[:40]
    lowest = _lowest(mask)
    meld_action = jnp.where(jnp.any(todo), _highest(todo), jnp.where(mask[FINISH], FINISH, lowest))
    force = jnp.where(opp_size >= FORCE_MIN_HAND, FORCE, NO_FORCE)
    action = jnp.where(
        phase == OFFER,
        offer,
        jnp.where(
            is_meld,
            meld_action,
            jnp.where(is_discard, DISCARD_BASE + discard0, jnp.where(phase == FORCE_DECISION, force, lowest)),
        ),
    )
    single = jnp.sum(mask, dtype=jnp.int32) <= 1
    del f64
    return jnp.where(phase == GAME_OVER, -1, jnp.where(single, lowest, action))
