"""Conquian as a :class:`pgx.Env`: ``init``, ``step`` and ``observe`` that ``jax.jit`` and
``jax.vmap`` compile, the rules of :mod:`conquian_env.jax.game`.

::

    import jax
    from conquian_env.jax import Conquian

    env = Conquian()                      # or Conquian(rules=FORCING), conquian_env.rules
    init, step = jax.jit(jax.vmap(env.init)), jax.jit(jax.vmap(env.step))
    state = init(jax.random.split(jax.random.PRNGKey(0), 4096))
    # state.legal_action_mask (4096, 85), state.observation (4096, OBS_SIZE), state.current_player
    state = step(state, actions)       # state.rewards (4096, 2), state.terminated

``OBS_SIZE`` is the size of :data:`conquian_env.layout.OBSERVATION`.  The state's pgx fields:
``current_player`` (the player to decide; at a terminal state the player who made the last
decision), ``observation`` (:func:`conquian_env.observation.encode` of ``current_player``, as
bools), ``legal_action_mask`` (all ``True`` at a terminal state, pgx's convention), ``rewards``
(+1 / -1 / 0 on the step that ends the game), ``terminated`` (``truncated`` is always ``False``:
every game ends), ``_step_count``.  An illegal action ends the game and loses it for the player
who took it (pgx's penalty, the engine's forfeit).  ``pgx.experimental.auto_reset(env.step,
env.init)`` restarts finished games.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pgx.core as core

from ..rules import Rules, resolve
from .game import ENV_ID, NUM_ACTIONS, OBS_SIZE, State, apply, deal_state, observe

_FIRST_CHOICES = (0, 1, "random")


def _check_deal(deal: jax.Array, first: jax.Array | int) -> None:
    if jnp.shape(deal) != (40,):
        raise ValueError(f"a deal is a permutation of the 40 card indexes, shape (40,), got shape {jnp.shape(deal)}")
    if jnp.shape(first) != ():
        raise ValueError(f"first is one player, 0 or 1, got shape {jnp.shape(first)}")
    try:
        cards, who = np.asarray(deal), np.asarray(first)
    except jax.errors.TracerArrayConversionError:
        return  # traced: checked by whoever built it
    if not np.issubdtype(cards.dtype, np.integer) or sorted(cards.tolist()) != list(range(40)):
        raise ValueError(f"a deal is a permutation of the card indexes 0..39, got {cards.tolist()}")
    if not np.issubdtype(who.dtype, np.integer) or who.dtype == np.bool_ or int(who) not in (0, 1):
        raise ValueError(f"first must be 0 or 1, got {first!r}")


class Conquian(core.Env):
    """Two-player Conquian for Pgx (see the module docstring).

    ``rules``: the :class:`~conquian_env.rules.Rules` (its fields work as keyword shortcuts;
    static: fixed when the functions are traced).  ``first``: who plays first in
    a new game: 0 (the default, as ``new_game``), 1, or ``"random"`` (drawn from the key).
    A new game deals from ``jax.random.permutation`` of the init key (deal order as
    :func:`conquian_env.game.shuffled_deal`); :meth:`init_from_deal` starts a given deal.
    """

    def __init__(self, *, rules: Rules | None = None, first: int | str = 0, **rule_fields: bool):
        super().__init__()
        try:
            rules = resolve(rules, **rule_fields)
        except ValueError as err:  # a bad rule value is a TypeError here, as it always was
            raise TypeError(str(err)) from None
        if isinstance(first, bool) or first not in _FIRST_CHOICES:
            raise ValueError(f"first must be 0, 1 or 'random', got {first!r}")
        self.rules = rules
        self.first = first

    def _init(self, key: jax.Array) -> State:
        deal_key, first_key = jax.random.split(key)
        deal = jax.random.permutation(deal_key, 40)
        if self.first == "random":
            first = jax.random.bernoulli(first_key).astype(jnp.int32)
        else:
            first = jnp.int32(self.first)
        return deal_state(deal, first)

    def init_from_deal(self, deal: jax.Array, first: jax.Array | int = 0) -> State:
        """The game dealt from ``deal`` (a permutation of 0..39: cards 0..19 alternately to
        players 0 and 1, then the stock, top first), ``first`` to move
        (``conquian_env.vector.deal_permutation`` builds the permutation of a stacked deal).

        The shape is always checked; the values when they are concrete (not under ``jit``
        or ``vmap``, where a traced deal must be a permutation already): ``ValueError``.
        """
        _check_deal(deal, first)
        state = deal_state(deal, first)
        return state.replace(observation=self._observe(state, state.current_player))

    def _step(self, state: core.State, action: jax.Array, key: jax.Array | None) -> State:
        del key  # the whole game is dealt at init
        assert isinstance(state, State)
        return apply(state, action, self.rules)

    def observe(self, state: core.State, player: jax.Array | int | None = None) -> jax.Array:
        """The observation of ``player`` (default: ``state.current_player``), bools ``(OBS_SIZE,)``
        (the pieces of :data:`conquian_env.layout.OBSERVATION`)."""
        return jax.lax.stop_gradient(self._observe(state, state.current_player if player is None else player))

    def _observe(self, state: core.State, player_id: jax.Array) -> jax.Array:
        assert isinstance(state, State)
        return observe(state, player_id, self.rules)

    @property
    def id(self) -> str:
        return ENV_ID

    @property
    def version(self) -> str:
        return "v0"

    @property
    def num_players(self) -> int:
        return 2

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (OBS_SIZE,)
