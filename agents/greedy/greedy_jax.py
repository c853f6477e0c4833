"""The greedy bot (:class:`agents.greedy.greedy.GreedyAgent`) as pure JAX functions.

:func:`greedy_actions` decides for every game of a batch of states, :func:`greedy_action`
for one state (the same code on a batch of one): ``GreedyAgent.choose`` for the player to
move in a game of ``rules`` (:class:`conquian_env.rules.Rules`, a Python value fixed when
they are traced, as the engine's; the standard game unless given), decision for decision
(``tests/test_jax.py`` compares them on thousands of positions and whole games).  No
Python control flow on traced values: ``jax.jit`` compiles them, for example as the
opponent of a learner inside one jitted training loop (``examples/jax_ppo.py --opponent
greedy``).  Only what the mover sees is read.  Like the
compiled twin :mod:`agents.greedy.greedy_kernels` they keep no state: in the meld phase the
take's lay-down plan is recomputed (and re-planned from the cards chosen when they left
it), which is the agent's own plan whenever the meld so far followed it (always, when the
bot made the meld).

Exact floats.  The greedy evaluation sums weights such as 0.3 and 0.06 in ``float64`` and
breaks ties by the first candidate of highest value, so the rounding of those sums decides
some choices.  The evaluation here runs in ``float64`` too (in a scoped
``jax.enable_x64``: the caller's dtypes are untouched), summing in the same order.
Accelerators without ``float64`` (TPUs) cannot run it exactly.

Cheaper than the fixed worst case.  A take is planned over up to 177 candidate lays, each
followed by a discard search over up to ten discards whose evaluation asks meld questions
(a card's quality, the winning cards of a ready hand); paying that worst case in every
game would cost thousands of meld searches a decision.  Instead:

* Lay-independent parts are computed once: the hand+meld pool after a discard is the same
  for every lay (the player's cards and the face-up card, less the discard), so the
  winning cards after each discard (``can_split(pool - d + x)`` for every card ``x``) are
  one table of at most 440 questions for the whole decision, not one per lay.
* Every meld question first passes a cheap necessary test (each card lies in a block of
  three consecutive ranks of its suit or at a rank with three cards; about twenty bit
  operations); most fail it (a ten-card pool with a loose card cannot split whatever one
  card is added).  Questions whose answer cannot matter are not asked (a card that fits
  the meld alone needs no pair question; a pair with a dead card is never asked).
* The questions that remain, of the whole batch together, are compacted (a cumulative
  sum and a scatter) and sent to the full search (:func:`conquian_env.jax.melds.meld_search`,
  72 set choices) a chunk at a time in a ``lax.while_loop`` until none is left; the lays
  whose meld splits, of every game, are compacted the same way and evaluated a chunk at
  a time.  A batch so costs its total work, not its size times its hardest position
  (which is what ``jax.vmap`` of per-game loops would cost: under ``vmap`` a
  ``while_loop`` runs until the busiest game is done).  ``where`` skips games outright.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from conquian_env.extras import missing

try:
    import jax
    import jax.numpy as jnp
except ImportError as err:  # JAX and Pgx, the 'jax' extra
    raise missing(err, "agents.greedy.greedy_jax") from None

from conquian_env import actions as _actions
from conquian_env.jax.game import DISCARD, FORCE_DECISION, GAME_OVER, MELD, OFFER, TURNED, State, player_row
from conquian_env.jax.melds import RANK_BITS, can_split, card_words, count, long_blocks, meld_search, words_to_bools
from conquian_env.rules import Rules, resolve

from .greedy_weights import (
    DISTANT_WEIGHT,
    FEED_PENALTY,
    FEED_PENALTY_NEAR_OUT,
    FORCE_MIN_HAND,
    LAY_COST,
    MAX_FULL_ENUM,
    OUT_WEIGHT,
    PARTIAL_WEIGHT,
    READY_BONUS,
)

TAKE, REFUSE, FINISH, FORCE, NO_FORCE = (
    _actions.TAKE,
    _actions.REFUSE,
    _actions.FINISH,
    _actions.FORCE,
    _actions.NO_FORCE,
)
DISCARD_BASE = _actions.DISCARD_BASE

#: the fewest meld questions sent to the full search at once, and lays evaluated at once
#: (both grow with the batch: :func:`_chunks`)
CHUNK = 8
LAY_CHUNK = 2
#: hand slots (a hand holds at most ten cards)
SLOTS = 10
_WORD = 0xFFFFF


def partner_masks() -> list[list[int]]:
    """For each card, the two-card masks completing every 3-card set or run holding it, in
    greedy's order (``agents.greedy.greedy.PARTNERS``): the set pairs, then the runs from low to high."""
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
    a0, a1, a2, a3 = w0 & RANK_BITS, w0 >> 10, w1 & RANK_BITS, w1 >> 10
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


# ---------------------------------------------------------------- the evaluation (agents.greedy.greedy)
# ``lane``: what every evaluation of one decision shares (lay-independent), a dict of arrays
# of one game: the hand's cards in card order as slots (``card``, ``valid``, ``words``,
# their neighbours ``nb``, partner pairs ``part`` / ``part_ok``), ``live``, the winning
# cards after each discard ``wins`` (11, 2; row 10: no discard) and the feed penalty of
# each slot's card ``feed`` (10,).


def _eval_queries(lane: dict, meld: jax.Array, hand: jax.Array, fit: jax.Array | None = None):
    """The meld questions of one evaluation: with ``fit`` None, whether each hand card fits
    ``meld`` alone (``(10, 2)`` words and whether each is asked); given ``fit``, each card
    with each partner pair (``(60, 2)``), asked only where the answer can matter: the card
    does not fit alone, the pair meets the meld but is not inside it (then the question is
    the fit question), and its card outside the meld is held or live (else it is gone)."""
    cw, nb, pm = lane["words"], lane["nb"], lane["part"]
    active = lane["valid"] & _any(cw & hand)
    if fit is None:
        return meld | cw, active & _any(meld & nb)
    pool = hand | meld
    s_q = meld[None, None] | cw[:, None] | pm
    meets = _any(pm & meld) & _any(pm & ~meld)
    reachable = ~_any(pm & ~pool & ~lane["live"])
    s_need = (active & ~fit)[:, None] & lane["part_ok"] & meets & reachable
    return s_q.reshape(-1, 2), s_need.reshape(-1)


def _eval_finish(
    lane: dict, meld: jax.Array, hand: jax.Array, use_none: jax.Array, ok: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``greedy.choose_discard(hand, meld, ...)`` (``use_none`` False) or
    ``greedy.position_value(hand, meld, live)`` (True) as ``(discard card or -1, value)``,
    given the answers ``ok`` to :func:`_eval_queries`."""
    f64 = jnp.float64
    cw, nb, pm, pm_ok, live = lane["words"], lane["nb"], lane["part"], lane["part_ok"], lane["live"]
    active = lane["valid"] & _any(cw & hand)
    fit = ok[:SLOTS]
    # a pair inside the meld asks the fit question (and a card that fits needs no pair)
    split3 = ok[SLOTS:].reshape(SLOTS, 6) | (fit[:, None] & ~_any(pm & ~meld))
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
    gone = ~full & _any(pm[None] & ~held[:, :, None] & ~live)
    partial = jnp.where(~_any(have & meld) | split3[None], f64(PARTIAL_WEIGHT), f64(0.0))
    inc = jnp.where(pm_ok[None] & ~full & ~gone, jnp.where(_any(have), partial, f64(DISTANT_WEIGHT)), f64(0.0))
    q = jnp.zeros(inc.shape[:2], f64)
    for k in range(6):  # greedy.card_quality: in partner order
        q = q + inc[:, :, k]
    q = jnp.where(q < 1.0, q, f64(1.0))
    q = jnp.where(fit[None] | jnp.any(ret, axis=-1), f64(1.0), q)  # (11, 10)
    card_active = active[None] & (jnp.arange(11)[:, None] != jnp.arange(SLOTS)[None])
    value = jnp.broadcast_to(count(meld).astype(f64), (11,))
    for j in range(SLOTS):  # greedy._value_given: in card order
        value = value + jnp.where(card_active[:, j], q[:, j], f64(0.0))
    hopeless = jnp.any(card_active & (q == 0.0), axis=-1)
    incomplete = card_active & (q < 1.0)
    ones = jnp.full((2,), _WORD, jnp.uint32)
    cand = jax.lax.reduce(
        jnp.where(incomplete[..., None], nb[None], ones), jnp.uint32(_WORD), jax.lax.bitwise_and, (1,)
    )
    nb_all = jnp.asarray(_t()["nb"])
    near = jax.lax.reduce(
        jnp.where(words_to_bools(pool_e)[..., None], nb_all[None], jnp.uint32(0)),
        jnp.uint32(0),
        jax.lax.bitwise_or,
        (1,),
    )
    cand = jnp.where(jnp.any(incomplete, axis=-1)[:, None], cand, near)
    outs = count(lane["wins"] & cand & live & ~pool_e)  # (11,)
    value = jnp.where(~hopeless & (outs > 0), value + (f64(READY_BONUS) + f64(OUT_WEIGHT) * outs.astype(f64)), value)
    value = value - jnp.concatenate([lane["feed"], jnp.zeros(1, f64)])
    # greedy.choose_discard: the first card of highest value, from -1e9
    best_card, best_value = jnp.int32(-1), f64(-1e9)
    for e in range(SLOTS):
        better = e_active[e] & (value[e] > best_value)
        best_card = jnp.where(better, lane["card"][e], best_card)
        best_value = jnp.where(better, value[e], best_value)
    return jnp.where(use_none, jnp.int32(-1), best_card), jnp.where(use_none, value[SLOTS], best_value)


def _highest(bools: jax.Array) -> jax.Array:
    """Index of the last True (-1 if none); min/max reductions, no argmax (whose cached
    lowering does not survive the scoped ``enable_x64``)."""
    return jnp.max(jnp.where(bools, jnp.arange(bools.shape[-1], dtype=jnp.int32), jnp.int32(-1)), axis=-1)


def _lowest(bools: jax.Array) -> jax.Array:
    n = bools.shape[-1]
    return jnp.min(jnp.where(bools, jnp.arange(n, dtype=jnp.int32), jnp.int32(n)), axis=-1)


def _setup(state: State) -> dict:
    """One game's lane (see above), the two searches' inputs and their candidate lays, and
    the meld questions that do not depend on the lay (winning cards, feed penalties)."""
    t = _t()
    p = state.current_player
    hand, meld = player_row(state._hands, p), player_row(state._melds, p)
    opp_meld, opp_size = player_row(state._melds, 1 - p), count(player_row(state._hands, 1 - p))
    face = card_words(state._face)
    chosen = state._chosen
    live = jnp.full(2, _WORD, jnp.uint32) & ~(hand | state._melds[0] | state._melds[1] | state._dead | chosen | face)
    phase = state._phase
    hb = words_to_bools(hand)
    slot_card = jnp.argsort(~hb, stable=True)[:SLOTS].astype(jnp.int32)
    slot_valid = jnp.arange(SLOTS) < count(hand)
    slot_words = jnp.where(slot_valid[:, None], card_words(slot_card), jnp.uint32(0))
    nb_t = jnp.asarray(t["nb"])
    slot_nb = nb_t[slot_card]
    # winning cards after each discard: the pool (hand, meld, face-up card) is the same for every lay
    r = jnp.concatenate([(hand | meld | face) & ~slot_words, (hand | meld)[None]])  # (11, 2)
    win_q = r[:, None] | card_words(jnp.arange(40))[None]
    win_need = words_to_bools(live & ~r) & jnp.concatenate([slot_valid, jnp.ones(1, bool)])[:, None]
    feed_words = jnp.concatenate([slot_words, face[None]])
    feed_nb = jnp.concatenate([slot_nb, nb_t[jnp.maximum(state._face, 0)][None]])
    # the two searches: the take's plan (offer, meld) or the discard (discard phase); and the
    # re-plan from the cards chosen (meld) or the value of keeping the hand (offer)
    is_meld, is_discard = phase == MELD, phase == DISCARD
    bases = jnp.stack([meld | face, jnp.where(is_meld, meld | face | chosen, meld)])
    rests = jnp.stack([hand, jnp.where(is_meld, hand & ~chosen, hand)])
    enums = jnp.stack([~is_discard, is_meld])
    use_none = jnp.stack([jnp.bool_(False), ~is_meld])
    _, playable, _ = jax.vmap(meld_search)(bases, rests)
    goes_out = enums & jax.vmap(can_split)(bases | rests)
    playable = jnp.where(enums[:, None], playable, jnp.uint32(0))
    n = count(playable)
    pb = words_to_bools(playable)  # (2, 40)
    rank = jnp.clip(jnp.cumsum(pb, axis=-1, dtype=jnp.int32) - 1, 0, SLOTS - 1)
    js = jnp.asarray(t["lays"])[n]  # (2, K)
    lay_ok = jnp.asarray(t["lay_ok"])[n] & enums[:, None]
    lays = _to_words(pb[:, None] & ((js[:, :, None] >> rank[:, None]) & 1).astype(bool))  # (2, K, 2)
    return {
        "lane": {
            "card": slot_card,
            "valid": slot_valid,
            "words": slot_words,
            "nb": slot_nb,
            "part": jnp.asarray(t["part"])[slot_card],
            "part_ok": jnp.asarray(t["part_ok"])[slot_card] & slot_valid[:, None],
            "live": live,
        },
        "win_q": win_q,
        "win_need": win_need,
        "feed_q": opp_meld | feed_words,
        "feed_need": _any(opp_meld & feed_nb) & _any(feed_words),
        "opp_size": opp_size,
        "bases": bases,
        "rests": rests,
        "enums": enums,
        "use_none": use_none,
        "goes_out": goes_out,
        "lays": lays,
        "lay_q": bases[:, None] | lays,
        "lay_ok": lay_ok,
    }


def refusing_feeds_opponent(state: State, p: jax.Array, rules: Rules) -> jax.Array:
    """greedy.refusing_feeds_opponent for player ``p`` of one game of ``rules``."""
    return (state._source == TURNED) & (state._owner == p) & ~state._passed


def _decide(
    state: State, s: dict, lays: jax.Array, discards: jax.Array, values: jax.Array, feed_face: jax.Array, rules: Rules
):
    """GreedyAgent.choose from the two searches' results (one game)."""
    p = state.current_player
    phase, mask, chosen = state._phase, state.legal_action_mask, state._chosen
    lay0, discard0, value0 = lays[0], discards[0], values[0]
    lay1, keep = lays[1], values[1]
    # offer: take when the plan is at least as good as keeping (greedy.take_margin)
    keep = jnp.where(refusing_feeds_opponent(state, p, rules), keep - feed_face, keep)
    offer = jnp.where(mask[TAKE] & (value0 - keep >= 0), TAKE, REFUSE)
    # meld: replay the plan, highest card first, then finish
    plan = jnp.where(_any(chosen & ~lay0), lay1 | chosen, lay0)
    todo = words_to_bools(plan & ~chosen) & mask[:40]
    lowest = _lowest(mask)
    meld_action = jnp.where(jnp.any(todo), _highest(todo), jnp.where(mask[FINISH], FINISH, lowest))
    force = jnp.where(s["opp_size"] >= FORCE_MIN_HAND, FORCE, NO_FORCE)
    action = jnp.where(
        phase == OFFER,
        offer,
        jnp.where(
            phase == MELD,
            meld_action,
            jnp.where(phase == DISCARD, DISCARD_BASE + discard0, jnp.where(phase == FORCE_DECISION, force, lowest)),
        ),
    )
    single = jnp.sum(mask, dtype=jnp.int32) <= 1
    return jnp.where(phase == GAME_OVER, -1, jnp.where(single, lowest, action)).astype(jnp.int32)


def _chunks(n: int) -> tuple[int, int]:
    """(meld questions, lays) searched per loop step for a batch of ``n`` games."""
    return max(CHUNK, min(n, 8192)), max(LAY_CHUNK, min(n // 2, 4096))


def _greedy_actions(states: State, where: jax.Array | None, rules: Rules) -> jax.Array:
    f64 = jnp.float64
    n = states.current_player.shape[0]
    chunk, lay_chunk = _chunks(n)
    s = jax.vmap(_setup)(states)
    # games not asked (and finished ones) ask no meld question
    asked = states._phase != GAME_OVER
    if where is not None:
        asked = asked & jnp.asarray(where, bool)
    # and only the searches a decision reads: none with one legal action or at a force
    # decision; the second (keeping the hand, the re-plan) only to take or to meld
    mask, phase = states.legal_action_mask, states._phase
    decides = asked & (jnp.sum(mask, axis=-1) > 1)
    can_take = (phase == OFFER) & mask[:, TAKE]
    first_search = can_take | (phase == MELD) | (phase == DISCARD)
    searched = decides[:, None] & jnp.stack([first_search, can_take | (phase == MELD)], 1)
    s["win_need"] = s["win_need"] & jnp.any(searched, axis=1)[:, None, None]
    s["feed_need"] = s["feed_need"] & jnp.any(searched, axis=1)[:, None]
    s["lay_ok"] = s["lay_ok"] & searched[:, :, None]
    lane = s["lane"]
    # the lay-independent questions of the whole batch, compacted together
    wins = _split_many(s["win_q"].reshape(-1, 2), s["win_need"].reshape(-1), chunk).reshape(n, 11, 40)
    lane["wins"] = _to_words(wins)
    fits = _split_many(s["feed_q"].reshape(-1, 2), s["feed_need"].reshape(-1), chunk).reshape(n, SLOTS + 1)
    penalty = jnp.where(s["opp_size"] <= 1, f64(FEED_PENALTY_NEAR_OUT), f64(FEED_PENALTY))[:, None]
    feed = jnp.where(fits, penalty, f64(0.0))
    lane["feed"] = feed[:, :SLOTS]
    # the candidate lays whose meld splits (greedy.plan_take), of every game and both searches
    k_all = s["lays"].shape[2]
    splits = _split_many(s["lay_q"].reshape(-1, 2), s["lay_ok"].reshape(-1), chunk).reshape(n, 2, k_all)
    first = jnp.arange(k_all) == 0
    # not enumerating: the empty lay (the discard, keeping the hand); only the searches read
    valid = jnp.where(s["enums"][..., None], splits & ~s["goes_out"][..., None], first) & searched[:, :, None]
    # evaluate them all, lay_chunk at a time across the batch
    flat = valid.reshape(-1)
    total = jnp.sum(flat, dtype=jnp.int32)
    size = flat.shape[0]
    pad = -(-size // lay_chunk) * lay_chunk
    pos = jnp.cumsum(flat, dtype=jnp.int32) - 1
    order = (
        jnp.full(pad, size, jnp.int32).at[jnp.where(flat, pos, pad)].set(jnp.arange(size, dtype=jnp.int32), mode="drop")
    )
    lays_flat = jnp.concatenate([s["lays"].reshape(-1, 2), jnp.zeros((1, 2), jnp.uint32)])
    sizes = count(lays_flat).astype(f64)

    def body(carry):
        i, vals, discs = carry
        idx = jax.lax.dynamic_slice(order, (i * lay_chunk,), (lay_chunk,))
        g = jnp.minimum(idx // (2 * k_all), n - 1)
        which = (idx // k_all) % 2
        lay = lays_flat[idx]
        meld = s["bases"][g, which] | lay
        hand = s["rests"][g, which] & ~lay
        none = s["use_none"][g, which]
        sub = jax.tree_util.tree_map(lambda x: x[g], lane)
        q, need = jax.vmap(_eval_queries)(sub, meld, hand)
        fit = _split_many(q.reshape(-1, 2), need.reshape(-1), chunk).reshape(need.shape)
        q, need = jax.vmap(_eval_queries)(sub, meld, hand, fit)
        pair = _split_many(q.reshape(-1, 2), need.reshape(-1), chunk).reshape(need.shape)
        ok = jnp.concatenate([fit, pair], axis=1)
        disc, value = jax.vmap(_eval_finish)(sub, meld, hand, none, ok)
        value = value - f64(LAY_COST) * sizes[idx]
        return i + 1, vals.at[idx].set(value, mode="drop"), discs.at[idx].set(disc, mode="drop")

    start = (jnp.int32(0), jnp.full(size + 1, -jnp.inf, f64), jnp.full(size + 1, -1, jnp.int32))
    _, vals, discs = jax.lax.while_loop(lambda c: c[0] * lay_chunk < total, body, start)
    vals, discs = vals[:size].reshape(n, 2, k_all), discs[:size].reshape(n, 2, k_all)
    # greedy.plan_take: the first lay of highest value (none valid: lay 0, discard -1, -inf)
    best = jnp.max(vals, axis=-1)
    k = _lowest(vals == best[..., None])
    pick = jnp.arange(k_all) == k[..., None]
    lay = jnp.sum(jnp.where(pick[..., None], s["lays"], jnp.uint32(0)), axis=-2, dtype=jnp.uint32)
    disc = jnp.sum(jnp.where(pick, discs, 0), axis=-1, dtype=jnp.int32)
    out = s["goes_out"]
    lay = jnp.where(out[..., None], s["rests"], lay)
    disc = jnp.where(out, jnp.int32(-1), disc)
    best = jnp.where(out, f64(jnp.inf), best)
    actions = jax.vmap(lambda *a: _decide(*a, rules))(states, s, lay, disc, best, feed[:, SLOTS])
    return jnp.where(asked, actions, jnp.int32(-1))


def greedy_actions(states: State, where: jax.Array | None = None, rules: Rules | None = None) -> jax.Array:
    """``GreedyAgent.choose`` for the player to move in each game of a batch of states (a
    leading batch axis, as ``jax.vmap(env.init)`` makes): int32 action ids, -1 where a game
    is over.  ``rules``: the games' (None: the standard game), fixed when traced (jit a
    ``functools.partial`` of it).  Pure; ``jax.jit`` it.  The meld questions of the whole batch are searched
    together (see the module docstring), so a batch costs its total work.

    ``where`` (bools, one per game): only those games are decided, the others get -1 and
    cost nothing (for example the games where a learner, not the bot, is to move).
    """
    if where is not None and jnp.shape(where) != states.current_player.shape:
        raise ValueError(
            f"where must hold one bool per game, shape {states.current_player.shape}, got shape {jnp.shape(where)}"
        )
    with jax.enable_x64(True):
        return _greedy_actions(states, where, resolve(rules))


def greedy_action(state: State, rules: Rules | None = None) -> jax.Array:
    """``GreedyAgent.choose`` for the player to move in one (un-batched) state: an int32
    action id, -1 once the game is over.  ``jax.vmap`` it for a batch (each game then
    loops until the batch's busiest one is done: :func:`greedy_actions` is faster), or
    ``jax.lax.map`` it (each game's own work)."""
    batch = jax.tree_util.tree_map(lambda x: x[None], state)
    return greedy_actions(batch, rules=rules)[0]
