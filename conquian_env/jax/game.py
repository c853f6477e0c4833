"""The Conquian rules (:mod:`conquian_env.game`) as pure JAX functions of one game's state.

Every function here takes and returns one game (no batch axis) and has no Python control
flow on traced values: ``jax.vmap`` batches it and ``jax.jit`` compiles it.  Card sets are
two suit-aligned ``uint32`` words (:mod:`conquian_env.jax.melds`); the state's fields
mirror :class:`conquian_env.game.GameState` one for one (``current_player`` is its
``player``; ``_step_count`` its ``move_count``).

* :func:`deal_state` starts a game from a permutation of the 40 cards, dealt as
  :func:`conquian_env.game.shuffled_deal` deals: cards 0..19 one at a time to players 0
  and 1, cards 20..39 the stock, top first.
* :func:`apply` plays one action (an illegal one forfeits the game for the player to move,
  as ``GameState.forfeit`` does) and sets ``rewards`` / ``terminated``.
* :func:`observe` is :func:`conquian_env.observation.encode` (bool instead of int8).
* :func:`to_game_state` turns a state back into a scalar ``GameState`` (tests, debugging).

The rules (:class:`conquian_env.rules.Rules`, frozen and hashable) are a static Python value,
fixed when a function is traced (its fields as keywords are a shortcut,
:func:`conquian_env.rules.resolve`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pgx.core as core
from pgx._src.struct import dataclass

from .. import actions as _actions
from .. import game as _game
from .. import observation as _observation
from ..layout import OBSERVATION
from ..rules import Rules, resolve
from .melds import card_words, cards_words, count, meld_search, words_to_bools

OFFER, MELD, DISCARD, FORCE_DECISION, GAME_OVER = (
    _game.OFFER,
    _game.MELD,
    _game.DISCARD,
    _game.FORCE_DECISION,
    _game.GAME_OVER,
)
TURNED, DISCARDED = _game.TURNED, _game.DISCARDED
STOCK_SIZE = _game.STOCK_SIZE
DISCARD_BASE, TAKE, REFUSE, FINISH, FORCE, NO_FORCE, NUM_ACTIONS = (
    _actions.DISCARD_BASE,
    _actions.TAKE,
    _actions.REFUSE,
    _actions.FINISH,
    _actions.FORCE,
    _actions.NO_FORCE,
    _actions.NUM_ACTIONS,
)
OBS_SIZE = _observation.OBS_SIZE
_OBS_SIZE_OF = {p.name: p.size for p in OBSERVATION.pieces}
ENV_ID = "conquian"

_NO_CARDS = jnp.zeros(2, dtype=jnp.uint32)


@dataclass
class State(core.State):
    """One Conquian game (pgx fields first, then the rules' fields, card sets as words)."""

    current_player: jax.Array = jnp.int32(0)
    observation: jax.Array = jnp.zeros(OBS_SIZE, dtype=jnp.bool_)
    rewards: jax.Array = jnp.float32([0.0, 0.0])
    terminated: jax.Array = jnp.bool_(False)
    truncated: jax.Array = jnp.bool_(False)
    legal_action_mask: jax.Array = jnp.zeros(NUM_ACTIONS, dtype=jnp.bool_)
    _step_count: jax.Array = jnp.int32(0)
    # --- Conquian ---
    _hands: jax.Array = jnp.zeros((2, 2), dtype=jnp.uint32)
    _melds: jax.Array = jnp.zeros((2, 2), dtype=jnp.uint32)
    _discards: jax.Array = jnp.zeros((2, 2), dtype=jnp.uint32)
    _refusals: jax.Array = jnp.zeros((2, 2), dtype=jnp.uint32)
    _dead: jax.Array = jnp.zeros(2, dtype=jnp.uint32)
    _chosen: jax.Array = jnp.zeros(2, dtype=jnp.uint32)
    _stock: jax.Array = jnp.zeros(STOCK_SIZE, dtype=jnp.int32)
    _stock_pos: jax.Array = jnp.int32(0)
    _face: jax.Array = jnp.int32(-1)
    _source: jax.Array = jnp.int32(TURNED)
    _owner: jax.Array = jnp.int32(0)
    _passed: jax.Array = jnp.bool_(False)
    _phase: jax.Array = jnp.int32(OFFER)
    _winner: jax.Array = jnp.int32(-1)
    _forced: jax.Array = jnp.bool_(False)
    #: the face-up card (with the cards chosen) fits the mover's meld alone: the finish
    #: test of the meld phase, and the forcing test when the mover refuses the card
    _fits: jax.Array = jnp.bool_(False)

    @property
    def env_id(self) -> str:
        return ENV_ID


def player_row(pair: jax.Array, p: jax.Array) -> jax.Array:
    """``pair[p]`` of a per-player ``(2, 2)`` array (a card set of each player, two words each), as
    a select (no gather); the greedy bot (:mod:`agents.greedy.greedy_jax`) reads the state with it."""
    return jnp.where(p == 0, pair[0], pair[1])


def _set_row(pair: jax.Array, p: jax.Array, value: jax.Array) -> jax.Array:
    return jnp.where((jnp.arange(2) == p)[:, None], value[None, :], pair)


def legal(state: State) -> tuple[jax.Array, jax.Array]:
    """``(legal_action_mask, fits)`` of the player to move (``GameState._compute_mask``).

    Zeros once the game is over.  ``fits``: ``can_split(meld | face | chosen)``.
    """
    p = state.current_player
    hand = player_row(state._hands, p)
    base = player_row(state._melds, p) | card_words(state._face) | state._chosen
    can_take, playable, fits = meld_search(base, hand & ~state._chosen)
    phase = state._phase
    offer, meld, force = phase == OFFER, phase == MELD, phase == FORCE_DECISION
    mask = jnp.concatenate(
        [
            words_to_bools(playable) & meld,
            words_to_bools(hand) & (phase == DISCARD),
            jnp.stack([offer & can_take, offer, meld & fits, force, force]),
        ]
    )
    return mask, fits


def _with_legal(state: State) -> State:
    mask, fits = legal(state)
    return state.replace(legal_action_mask=mask, _fits=fits)


def deal_state(deal: jax.Array, first: jax.Array) -> State:
    """The start of a game (``new_game``) from a permutation ``deal`` of the card indexes
    0..39 and the player ``first`` to move, who turns the top stock card.  No observation
    (the environment adds it)."""
    deal = jnp.asarray(deal, jnp.int32)
    first = jnp.asarray(first, jnp.int32)
    hands = jnp.stack([cards_words(deal[0:20:2]), cards_words(deal[1:20:2])])
    state = State(_hands=hands, _stock=deal[20:])
    return _with_legal(_turn(state, first))


def _turn(state: State, p: jax.Array) -> State:
    return state.replace(
        _face=state._stock[jnp.minimum(state._stock_pos, STOCK_SIZE - 1)],
        _stock_pos=state._stock_pos + 1,
        _source=jnp.int32(TURNED),
        _owner=p,
        _passed=jnp.bool_(False),
        current_player=p,
        _phase=jnp.int32(OFFER),
    )


def _after_refusal(state: State, p: jax.Array) -> State:
    """``GameState._after_refusal`` of refuser ``p``."""
    passes = (state._source == TURNED) & (state._owner == p) & ~state._passed
    to_opponent = state.replace(_passed=jnp.bool_(True), current_player=1 - p, _phase=jnp.int32(OFFER))
    dead = state.replace(_dead=state._dead | card_words(state._face))
    empty = dead._stock_pos >= STOCK_SIZE
    drawn = dead.replace(_face=jnp.int32(-1), _winner=jnp.int32(-1), _phase=jnp.int32(GAME_OVER))
    turned = _turn(dead, p)
    return _select(passes, to_opponent, _select(empty, drawn, turned))


def _select(cond: jax.Array, a: State, b: State) -> State:
    return jax.tree_util.tree_map(lambda x, y: jnp.where(cond, x, y), a, b)


def _play(state: State, action: jax.Array, rules: Rules) -> State:
    """``GameState.apply`` of a legal ``action`` (no legal mask, rewards or termination yet)."""
    a = action
    p = state.current_player
    face = card_words(state._face)
    hand = player_row(state._hands, p)
    chosen = state._chosen

    # REFUSE: the card is refused; the opponent may force it (variant) or it moves on
    refused = state.replace(_refusals=_set_row(state._refusals, p, player_row(state._refusals, p) | face))
    force_now = jnp.bool_(rules.forcing) & state._fits
    refuse = _select(
        force_now,
        refused.replace(current_player=1 - p, _phase=jnp.int32(FORCE_DECISION)),
        _after_refusal(refused, p),
    )
    # TAKE / FORCE: melding starts (a forced take is the refuser's)
    take = state.replace(_phase=jnp.int32(MELD), _chosen=_NO_CARDS, _forced=jnp.bool_(False))
    force = state.replace(current_player=1 - p, _phase=jnp.int32(MELD), _chosen=_NO_CARDS, _forced=jnp.bool_(True))
    # meld a hand card
    add = state.replace(_chosen=chosen | card_words(a))
    # FINISH: the face-up card and the chosen cards go onto the meld
    left = hand & ~chosen
    out = jnp.all(left == 0)
    finished = state.replace(
        _melds=_set_row(state._melds, p, player_row(state._melds, p) | face | chosen),
        _hands=_set_row(state._hands, p, left),
        _chosen=_NO_CARDS,
        _face=jnp.int32(-1),
        _phase=jnp.where(out, GAME_OVER, DISCARD).astype(jnp.int32),
        _winner=jnp.where(out, p, state._winner).astype(jnp.int32),
    )
    # discard a hand card: it is offered to the opponent
    card = a - DISCARD_BASE
    bit = card_words(card)
    discard = state.replace(
        _hands=_set_row(state._hands, p, hand & ~bit),
        _discards=_set_row(state._discards, p, player_row(state._discards, p) | bit),
        _face=card.astype(jnp.int32),
        _source=jnp.int32(DISCARDED),
        _owner=p,
        _passed=jnp.bool_(False),
        current_player=1 - p,
        _phase=jnp.int32(OFFER),
    )
    # NO_FORCE: the refusal of the opponent stands
    no_force = _after_refusal(state, 1 - p)

    result = no_force
    for choice, branch in (
        (a == FORCE, force),
        (a == FINISH, finished),
        (a == REFUSE, refuse),
        (a == TAKE, take),
        ((a >= DISCARD_BASE) & (a < TAKE), discard),
        (a < DISCARD_BASE, add),
    ):
        result = _select(choice, branch, result)
    return result


def _forfeit(state: State) -> State:
    """``GameState.forfeit`` of the player to move (an illegal action)."""
    return state.replace(_winner=1 - state.current_player, _phase=jnp.int32(GAME_OVER), _chosen=_NO_CARDS)


def apply(state: State, action: jax.Array, rules: Rules | None = None, **rule_fields: bool) -> State:
    """Play ``action`` for the player to move; an illegal action loses the game for them.

    Sets the new legal mask, ``terminated`` and the rewards of this step (+1 / -1 to the
    winner / loser when the game ends with it, zero otherwise).  Neither the observation
    nor ``_step_count`` is touched: ``pgx.Env.step`` adds both.
    """
    action = jnp.asarray(action, jnp.int32)
    ok = (action >= 0) & (action < NUM_ACTIONS) & state.legal_action_mask[jnp.clip(action, 0, NUM_ACTIONS - 1)]
    state = _with_legal(_select(ok, _play(state, action, resolve(rules, **rule_fields)), _forfeit(state)))
    over = state._phase == GAME_OVER
    winner = state._winner
    rewards = jnp.where(winner == 0, jnp.float32([1.0, -1.0]), jnp.float32([-1.0, 1.0]))
    rewards = jnp.where(over & (winner >= 0), rewards, jnp.float32([0.0, 0.0]))
    return state.replace(rewards=rewards, terminated=over)


def observation_pieces(
    state: State, player: jax.Array, rules: Rules | None = None, **rule_fields: bool
) -> dict[str, jax.Array]:
    """Each piece of the observation of ``player``, by its name in
    :data:`conquian_env.layout.OBSERVATION` (bools, that piece's size); :func:`observe` lays them
    out in the layout's order.  One encoder per piece: adding a piece to the layout means adding
    its entry here (the piece of each rule variant, named after it, comes from the rules)."""
    rules = resolve(rules, **rule_fields)
    pl = jnp.asarray(player, jnp.int32)
    opp = 1 - pl
    face = state._face
    phase = state._phase
    phase_slot = jnp.where(phase == GAME_OVER, 5, jnp.where(state.current_player != pl, 4, phase))
    source_slot = jnp.where(face >= 0, 1 + (state._owner != pl).astype(jnp.int32) + 2 * (state._source == DISCARDED), 0)
    pieces = {
        "own_hand": words_to_bools(player_row(state._hands, pl)),
        "own_meld": words_to_bools(player_row(state._melds, pl)),
        "opponent_meld": words_to_bools(player_row(state._melds, opp)),
        "face_up": words_to_bools(card_words(face)),
        "dead": words_to_bools(state._dead),
        "pending_meld": words_to_bools(state._chosen),
        "opponent_discards": words_to_bools(player_row(state._discards, opp)),
        "opponent_refusals": words_to_bools(player_row(state._refusals, opp)),
        "own_discards": words_to_bools(player_row(state._discards, pl)),
        "own_refusals": words_to_bools(player_row(state._refusals, pl)),
        "stock_size": jnp.arange(STOCK_SIZE) < STOCK_SIZE - state._stock_pos,
        "own_hand_size": jnp.arange(_OBS_SIZE_OF["own_hand_size"]) == count(player_row(state._hands, pl)),
        "opponent_hand_size": jnp.arange(_OBS_SIZE_OF["opponent_hand_size"]) == count(player_row(state._hands, opp)),
        "phase": jnp.arange(_OBS_SIZE_OF["phase"]) == phase_slot,
        "source": jnp.arange(_OBS_SIZE_OF["source"]) == source_slot,
        "passed": ((face >= 0) & state._passed)[None],
        "forced": (state._forced & (phase == MELD))[None],
    }
    for name, on in rules.to_dict().items():  # each variant's 1-wide piece (observation.rules_bits)
        pieces[name] = jnp.full(1, on, jnp.bool_)
    return pieces


def observe(state: State, player: jax.Array, rules: Rules | None = None, **rule_fields: bool) -> jax.Array:
    """The observation of ``player``: :func:`conquian_env.observation.encode` as bools
    (``(OBS_SIZE,)``, the pieces of :data:`conquian_env.layout.OBSERVATION` in its order)."""
    pieces = observation_pieces(state, player, rules, **rule_fields)
    return jnp.concatenate([pieces[name] for name in OBSERVATION.names])


def _check_observation_pieces() -> None:
    """At import: the encoders above name exactly the layout's pieces, each of its size (a
    piece added to the layout without its JAX encoder, or resized, fails here, by name)."""
    shapes = jax.eval_shape(lambda s: observation_pieces(s, 0, Rules()), State())
    have, want = set(shapes), set(OBSERVATION.names)
    if have != want:
        raise RuntimeError(
            "conquian_env.jax.game.observation_pieces must encode exactly the pieces of "
            f"conquian_env.layout.OBSERVATION: missing {sorted(want - have)}, extra {sorted(have - want)}"
        )
    for piece in OBSERVATION.pieces:
        if shapes[piece.name].shape != (piece.size,):
            raise RuntimeError(
                f"conquian_env.jax.game.observation_pieces: piece {piece.name!r} has shape "
                f"{shapes[piece.name].shape}, the layout says ({piece.size},)"
            )


_check_observation_pieces()


# ---------------------------------------------------------------- the scalar engine's view
def _mask_of(words: Any) -> int:
    w = np.asarray(words)
    return int(w[0]) | int(w[1]) << 20


def to_game_state(state: State, rules: Rules | None = None, **rule_fields: bool) -> _game.GameState:
    """The scalar :class:`~conquian_env.game.GameState` of one (un-batched) JAX state."""
    g = _game.blank_state()
    g.hands = [_mask_of(state._hands[0]), _mask_of(state._hands[1])]
    g.melds = [_mask_of(state._melds[0]), _mask_of(state._melds[1])]
    g.discards = [_mask_of(state._discards[0]), _mask_of(state._discards[1])]
    g.refusals = [_mask_of(state._refusals[0]), _mask_of(state._refusals[1])]
    g.stock = tuple(int(c) for c in np.asarray(state._stock))
    g.stock_pos = int(state._stock_pos)
    g.dead = _mask_of(state._dead)
    g.chosen = _mask_of(state._chosen)
    g.face_up = int(state._face)
    g.source = int(state._source)
    g.owner = int(state._owner)
    g.passed = bool(state._passed)
    g.player = int(state.current_player)
    g.phase = int(state._phase)
    g.winner = int(state._winner)
    g.forced = bool(state._forced)
    g.rules = resolve(rules, **rule_fields)
    g.move_count = int(state._step_count)
    g._mask = -1
    return g
