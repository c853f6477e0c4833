"""Fuzzing the batched engine's public surface against the scalar engine (hypothesis).

Random positions (reached by play, then perhaps with one field broken) go in with
``set_game``; random actions of random dtypes, with random ``where`` masks, are stepped.
Every call either raises a clear ``ValueError`` and changes nothing, or leaves every row
equal to a scalar :class:`~conquian_env.game.GameState` driven the same way (state,
masks, observations, results).  The default run is small (a few seconds); the
slow-marked twin runs many more examples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from conquian_env.game import GAME_OVER, GameState, IllegalActionError, new_game  # noqa: E402
from conquian_env.observation import action_mask, encode  # noqa: E402
from conquian_env.rules import FORCING, STANDARD  # noqa: E402
from conquian_env.vector import VectorGame  # noqa: E402

ROWS = 3
INT_FIELDS = ("stock_pos", "dead", "face_up", "source", "owner", "player", "phase", "chosen", "winner", "move_count")
PAIR_FIELDS = ("hands", "melds", "discards", "refusals")
BOOL_FIELDS = ("passed", "forced")
#: what a mutated position may carry as its rules: the variants, and values that are not rules
ODD_RULES = st.sampled_from([STANDARD, FORCING, True, False, None, 1, {"forcing": True}, "forcing"])
ODD_VALUES = st.one_of(
    st.integers(-3, 45),
    st.sampled_from([2**40, 2**40 - 1, 2**63, -(2**63), 10**9, 2**64]),
    st.sampled_from([True, False, None, 1.5, "3", (1, 2)]),
)
DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint64, np.float32, np.bool_)


def _played(data: st.DataObject) -> GameState:
    """A position reached by random legal play (sometimes a forfeit), from a random deal."""
    s = new_game(
        data.draw(st.integers(0, 2**32 - 1)), forcing=data.draw(st.booleans()), first=data.draw(st.sampled_from([0, 1]))
    )
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    for _ in range(data.draw(st.integers(0, 90))):
        if s.is_terminal():
            break
        if rng.random() < 0.01:
            s.forfeit(s.player)
        else:
            s.apply(int(rng.choice(s.legal_actions())))
    return s


def _mutated(s: GameState, data: st.DataObject) -> GameState:
    """``s`` with one field set to a random value (perhaps a nonsense one)."""
    s = s.clone()
    kind = data.draw(st.sampled_from(["int", "pair", "bool", "rules", "stock"]))
    if kind == "int":
        setattr(s, data.draw(st.sampled_from(INT_FIELDS)), data.draw(ODD_VALUES))
    elif kind == "pair":
        name = data.draw(st.sampled_from(PAIR_FIELDS))
        value = list(getattr(s, name))
        if data.draw(st.booleans()):
            value[data.draw(st.sampled_from([0, 1]))] = data.draw(ODD_VALUES)
        else:
            value = data.draw(st.sampled_from([value[:1], value + [0], "xy", None]))
        setattr(s, name, value)
    elif kind == "bool":
        setattr(s, data.draw(st.sampled_from(BOOL_FIELDS)), data.draw(ODD_VALUES))
    elif kind == "rules":
        s.rules = data.draw(ODD_RULES)
    else:
        stock = list(s.stock)
        how = data.draw(st.sampled_from(["card", "short", "swap"]))
        if how == "card":
            stock[data.draw(st.integers(0, 19))] = data.draw(ODD_VALUES)
        elif how == "short":
            stock = stock[:-1]
        else:  # reorder the stock: the turned cards or the rest
            i, j = data.draw(st.integers(0, 19)), data.draw(st.integers(0, 19))
            stock[i], stock[j] = stock[j], stock[i]
        s.stock = tuple(stock)
    s._mask = -1  # the cached legal mask belongs to the old state
    return s


def _same(vg: VectorGame, scalar: list[GameState]) -> None:
    obs, masks = vg.observe()
    for i, s in enumerate(scalar):
        got = vg.get_game(i)
        assert got.to_dict() == s.to_dict(), i
        assert got.stock == tuple(s.stock) and got.stock_pos == s.stock_pos, i
        if not s.is_terminal():
            assert np.array_equal(masks[i], action_mask(s, s.player)), i
            assert np.array_equal(obs[i], encode(s, s.player)), i
        assert vg.players[i] == s.current_player, i


def _actions(data: st.DataObject, scalar: list[GameState]) -> tuple[np.ndarray, Any]:
    dtype = data.draw(st.sampled_from(DTYPES))
    values = []
    for s in scalar:
        legal = s.legal_actions()
        if legal and data.draw(st.integers(0, 3)) > 0:
            values.append(data.draw(st.sampled_from(legal)))  # mostly legal moves: the games go on
        else:
            values.append(data.draw(st.integers(-3, 90)))
    if np.issubdtype(dtype, np.unsignedinteger):
        values = [v % 256 if v < 0 else v for v in values]
        if data.draw(st.booleans()):
            values[data.draw(st.integers(0, ROWS - 1))] = int(np.iinfo(dtype).max)
    elif dtype in (np.int8,):
        values = [max(-128, min(127, v)) for v in values]
    actions = np.array(values, dtype=np.uint64 if np.issubdtype(dtype, np.unsignedinteger) else np.int64).astype(dtype)
    where = data.draw(
        st.one_of(
            st.none(),
            st.lists(st.booleans(), min_size=ROWS, max_size=ROWS).map(np.array),
            st.sampled_from([np.ones(ROWS, dtype=np.int64), np.ones(ROWS - 1, dtype=bool)]),
        )
    )
    return actions, where


def _expected_error(vg: VectorGame, scalar: list[GameState], actions: np.ndarray, where: Any) -> str | None:
    """The error ``step`` must raise (a pattern of its message), or None when it must play."""
    if actions.dtype.kind not in "iu":
        return "must be integers"
    if where is not None and (where.dtype != np.bool_ or where.shape != (ROWS,)):
        return "where must be a boolean array"
    rows = range(ROWS) if where is None else np.flatnonzero(where)
    for i in rows:
        if not 0 <= int(actions[i]) < 85:
            return f"game {i}: {int(actions[i])} is not an action id"
    for i in rows:
        if scalar[i].is_terminal():
            return f"game {i} is over"
    if vg.illegal_action == "raise":
        for i in rows:
            if not scalar[i].is_legal(int(actions[i])):
                return f"game {i}: illegal action {int(actions[i])}"
    return None


def _fuzz(data: st.DataObject) -> None:
    mode = data.draw(st.sampled_from(["raise", "penalize"]))
    vg = VectorGame(ROWS, seed=data.draw(st.integers(0, 2**16)), illegal_action=mode, parallel=data.draw(st.booleans()))
    scalar = [vg.get_game(i) for i in range(ROWS)]
    for _ in range(data.draw(st.integers(1, 3))):  # put positions in with set_game
        row = data.draw(st.integers(0, ROWS - 1))
        position = _played(data)
        if data.draw(st.booleans()):
            position = _mutated(position, data)
        before = vg.state.copy()
        try:
            vg.set_game(row, position)
        except ValueError as err:
            assert str(err)  # a message, and nothing written
            assert np.array_equal(vg.state, before)
            with pytest.raises(ValueError):
                position.validate()  # the one judgement of a state: the scalar engine's
        else:
            position.validate()
            scalar[row] = position.clone()
        _same(vg, scalar)
    for _ in range(data.draw(st.integers(0, 8))):  # step random actions
        actions, where = _actions(data, scalar)
        expected = _expected_error(vg, scalar, actions, where)
        before = vg.state.copy()
        if expected is not None:
            with pytest.raises(ValueError, match=expected):
                vg.step(actions, where, autoreset=False)
            assert np.array_equal(vg.state, before)
            continue
        result = vg.step(actions, where, autoreset=False)
        for i in range(ROWS) if where is None else np.flatnonzero(where):
            s, a = scalar[i], int(actions[i])
            if s.is_legal(a):
                s.apply(a)
                assert not result.illegal[i]
            else:
                with pytest.raises(IllegalActionError):
                    s.check_action(a)
                s.forfeit(s.player)
                assert result.illegal[i]
            if s.phase == GAME_OVER:
                assert result.dones[i] and result.winners[i] == s.winner
                assert tuple(result.rewards[i]) == s.returns() and result.moves[i] == s.move_count
        _same(vg, scalar)
        drawn = vg.random_actions(np.random.default_rng(len(scalar[0].legal_actions())))
        for s, a in zip(scalar, drawn.tolist(), strict=True):
            assert a == -1 if s.is_terminal() else s.is_legal(a)


_FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SLOW = settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_FAST
@given(st.data())
def test_set_game_and_step_raise_clearly_or_agree_with_the_scalar_engine(data):
    _fuzz(data)


@pytest.mark.slow
@_SLOW
@given(st.data())
def test_many_set_game_and_step_raise_clearly_or_agree_with_the_scalar_engine(data):
    _fuzz(data)
