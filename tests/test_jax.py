"""The JAX engine (conquian_env.jax) against the scalar engine, game by game.

Random games are played through both from the same deals with the same actions (the JAX
side batched, jitted and restarted by ``pgx.experimental.auto_reset``); every mask,
observation, player to move, reward, termination and full state is compared at every
step, under every rule variant (``tests.conftest.RULE_CASES``).  Runs on JAX's CPU backend.
"""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("pgx")

import jax.numpy as jnp  # noqa: E402
import pgx  # noqa: E402
from pgx.experimental import act_randomly, auto_reset  # noqa: E402

from conquian_env import actions, game, observation  # noqa: E402
from conquian_env.game import new_game  # noqa: E402
from conquian_env.jax import Conquian, to_game_state  # noqa: E402
from conquian_env.jax import game as J  # noqa: E402
from conquian_env.jax import melds as JM  # noqa: E402
from conquian_env.layout import OBSERVATION, Layout  # noqa: E402
from conquian_env.melds import can_extend_to_meld, can_split_into_melds, playable_cards  # noqa: E402
from conquian_env.observation import action_mask, encode  # noqa: E402
from conquian_env.rules import FORCING, STANDARD, Rules  # noqa: E402
from tests.conftest import RULE_CASES  # noqa: E402


def _words(mask: int) -> np.ndarray:
    return np.array([mask & 0xFFFFF, mask >> 20], dtype=np.uint32)


def _mask(words) -> int:
    w = np.asarray(words)
    return int(w[0]) | int(w[1]) << 20


def _lane(tree, i: int):
    return jax.tree_util.tree_map(lambda x: x[i], tree)


def _cards(mask: int) -> list[int]:
    return [c for c in range(40) if mask >> c & 1]


def test_constants_match_the_scalar_modules():
    assert (J.OFFER, J.MELD, J.DISCARD, J.FORCE_DECISION, J.GAME_OVER) == (
        game.OFFER,
        game.MELD,
        game.DISCARD,
        game.FORCE_DECISION,
        game.GAME_OVER,
    )
    assert (J.TAKE, J.REFUSE, J.FINISH, J.FORCE, J.NO_FORCE, J.NUM_ACTIONS) == (
        actions.TAKE,
        actions.REFUSE,
        actions.FINISH,
        actions.FORCE,
        actions.NO_FORCE,
        actions.NUM_ACTIONS,
    )
    assert J.OBS_SIZE == observation.OBS_SIZE == OBSERVATION.size


def _random_pool(rng: random.Random) -> tuple[int, int]:
    """Required and optional cards, at most eleven together (a player's cards and the face-up card)."""
    kind = rng.random()
    if kind < 0.35:  # set-heavy: three ranks, most suits (two or three set slots, quads)
        ranks = rng.sample(range(10), 3)
        cards = [s * 10 + r for r in ranks for s in range(4) if rng.random() < 0.85]
    elif kind < 0.6:  # run-heavy: two suits
        suits = rng.sample(range(4), 2)
        cards = [s * 10 + r for s in suits for r in range(10) if rng.random() < 0.6]
    else:
        cards = rng.sample(range(40), rng.randint(1, 11))
    rng.shuffle(cards)
    cards = cards[:11]
    cut = rng.randint(0, len(cards))
    return sum(1 << c for c in cards[:cut]), sum(1 << c for c in cards[cut:])


def test_meld_search_equals_the_scalar_meld_logic():
    rng = random.Random(11)
    pools = [_random_pool(rng) for _ in range(12000)]
    required = np.stack([_words(r) for r, _ in pools])
    optional = np.stack([_words(o) for _, o in pools])
    extend, play, splits = jax.device_get(jax.jit(jax.vmap(JM.meld_search))(required, optional))
    split = np.asarray(jax.jit(jax.vmap(JM.can_split))(required))
    for i, (r, o) in enumerate(pools):
        assert bool(extend[i]) == can_extend_to_meld(r, o), i
        assert _mask(play[i]) == playable_cards(r, o), i
        assert bool(split[i]) == bool(splits[i]) == can_split_into_melds(r), i
    assert 0.2 < extend.mean() < 0.8 and split.any()  # both answers occur often


def test_long_blocks_and_word_helpers():
    # 5C 6C 7C JC (a block of four) and AD 2D (too short); 2H..4H across no word boundary
    cards = [4, 5, 6, 7, 10, 11, 21, 22, 23]
    words = JM.cards_words(jnp.array(cards))
    assert _mask(words) == sum(1 << c for c in cards)
    assert _mask(JM.long_blocks(words)) == sum(1 << c for c in (4, 5, 6, 7, 21, 22, 23))
    assert int(JM.count(words)) == 9
    assert np.flatnonzero(np.asarray(JM.words_to_bools(words))).tolist() == cards
    assert _mask(JM.card_words(jnp.int32(-1))) == 0 and _mask(JM.card_words(jnp.int32(39))) == 1 << 39
    # KC (9) and AD (10) are adjacent bits but no run: the window never crosses suits
    assert _mask(JM.long_blocks(JM.cards_words(jnp.array([8, 9, 10, 11])))) == 0


#: games per batch in every test (one batch shape: each jitted function compiles once)
N = 48


@functools.cache
def _compiled(rules: Rules, first: int | str):
    """The environment and its jitted batched init, step and auto-reset step (compiled once per test run)."""
    env = Conquian(rules=rules, first=first)
    init = jax.jit(jax.vmap(env.init))
    step = jax.jit(jax.vmap(env.step))
    auto = jax.jit(jax.vmap(auto_reset(env.step, env.init)))
    return env, init, step, auto


def _scalar_twin(state, rules: Rules) -> game.GameState:
    """A scalar game from the JAX state's deal (hands, stock, first player), via new_game."""
    g = to_game_state(state, rules)
    assert g.stock_pos == 1 and g.move_count == 0
    hands = [_cards(g.hands[0]), _cards(g.hands[1])]
    twin = new_game(hands=hands, stock=list(g.stock), first=g.player, rules=rules)
    assert twin.to_dict() == g.to_dict()
    return twin


def _play_both(n: int, steps: int, rules: Rules, seed: int) -> int:
    """Random play through both engines; returns the number of finished games compared."""
    _, init, _, step = _compiled(rules, "random")
    key = jax.random.PRNGKey(seed)
    key, sub = jax.random.split(key)
    state = init(jax.random.split(sub, n))
    host = jax.device_get(state)
    scalar = [_scalar_twin(_lane(host, i), rules) for i in range(n)]
    rng = random.Random(seed)
    finished = 0
    for _ in range(steps):
        acts = np.zeros(n, dtype=np.int32)
        for i, s in enumerate(scalar):
            assert host.current_player[i] == s.current_player, i
            assert np.array_equal(host.observation[i], encode(s, s.player)), i
            assert np.array_equal(host.legal_action_mask[i], action_mask(s, s.player)), i
            acts[i] = rng.choice(s.legal_actions())
        key, sub = jax.random.split(key)
        state = step(state, jnp.asarray(acts), jax.random.split(sub, n))
        host = jax.device_get(state)
        for i, s in enumerate(scalar):
            s.apply(int(acts[i]))
            if s.is_terminal():
                finished += 1
                assert host.terminated[i], i
                assert tuple(host.rewards[i]) == s.returns(), i
                scalar[i] = _scalar_twin(_lane(host, i), rules)  # auto_reset dealt a new game
            else:
                assert not host.terminated[i] and not host.truncated[i], i
                assert tuple(host.rewards[i]) == (0.0, 0.0), i
                assert to_game_state(_lane(host, i), rules).to_dict() == s.to_dict(), i
    return finished


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_random_games_match_the_scalar_engine(rules):
    assert _play_both(N, 1300, rules, seed=3 + rules.flags) >= 900


@pytest.mark.slow
@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_many_random_games_match_the_scalar_engine(rules):
    assert _play_both(128, 2500, rules, seed=30 + rules.flags) >= 4000


def _played(rules: Rules, n: int, steps: int, seed: int):
    """States after ``steps`` random decisions in ``n`` games of ``first="random"`` (no reset)."""
    _, init, step, _ = _compiled(rules, "random")
    key = jax.random.PRNGKey(seed)
    state = init(jax.random.split(key, n))
    for _ in range(steps):
        key, sub = jax.random.split(key)
        state = step(state, act_randomly(sub, state.legal_action_mask))
    return state


def test_observing_the_player_not_to_move_and_terminal_conventions():
    env = _compiled(FORCING, "random")[0]
    state = _played(FORCING, N, 40, seed=9)
    other = 1 - state.current_player
    obs = jax.jit(jax.vmap(env.observe))(state, other)
    host = jax.device_get(state)
    for i in range(N):
        s = to_game_state(_lane(host, i), forcing=True)
        assert np.array_equal(np.asarray(obs[i]), encode(s, int(other[i])))
        if host.terminated[i]:  # pgx: every action "legal" at a terminal state, stepping it changes nothing
            assert host.legal_action_mask[i].all()
    done = _played(FORCING, N, 400, seed=2)
    assert bool(done.terminated.all())
    again = _compiled(FORCING, "random")[2](done, jnp.zeros(N, dtype=jnp.int32))
    assert not np.asarray(again.rewards).any()
    assert np.array_equal(np.asarray(again._hands), np.asarray(done._hands))


def test_observe_lays_out_the_pieces_in_the_order_of_the_layout(monkeypatch):
    host = jax.device_get(_played(FORCING, N, 40, seed=5))
    for i in range(4):
        state, s = _lane(host, i), to_game_state(_lane(host, i), forcing=True)
        for player in (0, 1):
            want = encode(s, player)
            pieces = J.observation_pieces(state, player, forcing=True)
            assert list(pieces) == list(OBSERVATION.names)  # one encoder per piece, in the layout's order
            obs = np.asarray(J.observe(state, player, forcing=True))
            for name in OBSERVATION.names:
                assert np.array_equal(np.asarray(pieces[name]), want[OBSERVATION.slice(name)]), name
                assert np.array_equal(obs[OBSERVATION.slice(name)], want[OBSERVATION.slice(name)]), name
    # the order is the layout's, not the encoder's: a layout with the pieces reversed reverses them
    backwards = Layout("observation", tuple(reversed(OBSERVATION.pieces)))
    monkeypatch.setattr(J, "OBSERVATION", backwards)
    state, s = _lane(host, 0), to_game_state(_lane(host, 0), forcing=True)
    want = encode(s, 1)
    reordered = np.concatenate([want[OBSERVATION.slice(name)] for name in backwards.names])
    assert np.array_equal(np.asarray(J.observe(state, 1, forcing=True)), reordered)


def test_a_layout_piece_without_its_jax_encoder_is_named(monkeypatch):
    J._check_observation_pieces()  # the shipped layout and encoders agree
    monkeypatch.setattr(J, "OBSERVATION", OBSERVATION.extend("observation", [("seen_twice", 40)]))
    with pytest.raises(RuntimeError, match=r"missing \['seen_twice'\], extra \[\]"):
        J._check_observation_pieces()
    resized = Layout("observation", [(p.name, p.size + (p.name == "phase")) for p in OBSERVATION.pieces])
    monkeypatch.setattr(J, "OBSERVATION", resized)
    with pytest.raises(RuntimeError, match=r"piece 'phase' has shape \(6,\), the layout says \(7,\)"):
        J._check_observation_pieces()


def test_an_illegal_action_loses_the_game_as_the_scalar_forfeit():
    _, init, step, _ = _compiled(STANDARD, "random")
    state = init(jax.random.split(jax.random.PRNGKey(4), N))
    acts = np.full(N, actions.REFUSE, dtype=np.int32)  # refusing is legal in every opening offer
    acts[5] = actions.FINISH  # never legal in an offer
    after = jax.device_get(step(state, jnp.asarray(acts)))
    before = jax.device_get(state)
    mover = int(before.current_player[5])
    assert after.terminated.tolist() == [i == 5 for i in range(N)]
    assert tuple(after.rewards[5]) == ((-1.0, 1.0) if mover == 0 else (1.0, -1.0))
    s = to_game_state(_lane(before, 5))
    s.forfeit(mover)
    s.move_count += 1  # pgx's _step_count counts every step taken, the illegal one too
    assert to_game_state(_lane(after, 5)).to_dict() == s.to_dict()


def test_same_key_same_game_and_init_from_deal_equals_new_game():
    init = _compiled(STANDARD, "random")[1]
    a, b = init(jax.random.split(jax.random.PRNGKey(7), N)), init(jax.random.split(jax.random.PRNGKey(7), N))
    assert to_game_state(_lane(a, 1)).to_dict() == to_game_state(_lane(b, 1)).to_dict()
    assert 0 < int(a.current_player.sum()) < N  # "random" draws both seats  # "random" draws both seats
    hands = [["AC", "2C", "3C", "4D", "5D", "6D", "JH", "QH", "KH", "AS"], "2S 3S 4S 5S 6S 7S JS QS KS AD"]
    stock = "2D 3D 7D JD QD KD AH 2H 3H 4H 5H 6H 7H 5C 6C 7C JC QC KC 4C"
    pytest.importorskip("numba")
    from conquian_env.vector import deal_permutation

    state = jax.jit(Conquian(forcing=True).init_from_deal)(jnp.asarray(deal_permutation(hands, stock)), 1)
    expected = new_game(hands=hands, stock=stock, first=1, forcing=True)
    assert to_game_state(state, forcing=True).to_dict() == expected.to_dict()
    assert np.array_equal(np.asarray(state.observation), encode(expected, 1))
    assert np.array_equal(np.asarray(state.legal_action_mask), action_mask(expected, 1))


def test_works_as_any_pgx_env_inside_one_jit():
    """Random play with auto_reset in a lax.scan, as code written for any pgx.Env runs it."""
    env = Conquian()
    assert isinstance(env, pgx.Env)
    assert (env.num_players, env.num_actions, env.observation_shape) == (2, 85, (OBSERVATION.size,))
    init = jax.vmap(env.init)
    step = jax.vmap(auto_reset(env.step, env.init))

    @jax.jit
    def run(key):
        state = init(jax.random.split(key, 32))

        def body(carry, _):
            state, key = carry
            key, k1, k2 = jax.random.split(key, 3)
            action = act_randomly(k1, state.legal_action_mask)
            state = step(state, action, jax.random.split(k2, 32))
            return (state, key), state.terminated.sum()

        (state, _), done = jax.lax.scan(body, (state, key), None, length=300)
        return state, done.sum()

    state, finished = run(jax.random.PRNGKey(1))
    assert int(finished) > 32 * 2  # about 60 decisions a game
    assert bool(state.legal_action_mask.any(axis=1).all())  # every game, restarted or not, has a move


def test_bad_deals_are_named():
    env = Conquian()
    with pytest.raises(ValueError, match=r"shape \(40,\)"):
        env.init_from_deal(np.arange(39))
    with pytest.raises(ValueError, match="permutation"):
        env.init_from_deal(np.zeros(40, dtype=np.int32))
    with pytest.raises(ValueError, match="permutation"):
        env.init_from_deal(np.arange(40) + 0.5)
    with pytest.raises(ValueError, match="first must be 0 or 1"):
        env.init_from_deal(np.arange(40), 2)
    with pytest.raises(ValueError, match="first must be 0 or 1"):
        env.init_from_deal(np.arange(40), True)


def test_bad_options_are_named():
    with pytest.raises(TypeError, match="forcing"):
        Conquian(forcing=1)
    with pytest.raises(ValueError, match="first"):
        Conquian(first=2)
    with pytest.raises(ValueError, match="first"):
        Conquian(first=True)


def test_import_conquian_env_needs_no_jax():
    """The extra stays optional: the plain package imports neither JAX nor Pgx, even with them installed."""
    import subprocess
    import sys

    code = "import sys, conquian_env; print(sorted(m for m in ('jax', 'pgx', 'conquian_env.jax') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ---------------------------------------------------------------- the greedy bot in JAX
@functools.cache
def _greedy(rules: Rules = STANDARD):
    """greedy_actions of games of ``rules`` jitted for the batch shape of every test (compiled once per test run)."""
    from agents.greedy.greedy_jax import greedy_actions

    return jax.jit(functools.partial(greedy_actions, rules=rules))


def test_greedy_constants_match_agents_greedy():
    from agents.greedy import greedy as G
    from agents.greedy import greedy_jax as JG

    for name in (
        "PARTIAL_WEIGHT",
        "DISTANT_WEIGHT",
        "READY_BONUS",
        "OUT_WEIGHT",
        "FEED_PENALTY",
        "FEED_PENALTY_NEAR_OUT",
        "FORCE_MIN_HAND",
        "LAY_COST",
    ):
        assert getattr(JG, name) == getattr(G, name), name
    assert JG.MAX_FULL_ENUM == G.MAX_FULL_ENUM
    assert [tuple(p) for p in JG.partner_masks()] == list(G.PARTNERS)
    for n, js in enumerate(JG.lay_orders()):  # greedy.plan_take's candidate order, all 2**n cards playable
        cards = (1 << n) - 1
        subsets = G.subsets(cards)
        expected = subsets if n <= G.MAX_FULL_ENUM else [s for s in subsets if s.bit_count() <= 3] + [cards]
        assert js == expected, n


def _reference_choice(s: game.GameState) -> int:
    """GreedyAgent.choose on the mover's PlayerView, the agent holding the take plan in the
    meld phase (the plan it made when it took the card, as the stateless JAX bot recomputes
    it; see agents.greedy.greedy_jax and tests/test_batched_greedy.py)."""
    from agents.base import PlayerView
    from agents.greedy.greedy import GreedyAgent, plan_take

    p = s.player
    agent = GreedyAgent()
    if s.phase == game.MELD:
        live = s.unseen_cards(p)
        lay = plan_take(s.hands[p], s.melds[p], s.face_up, 0, live, s.melds[1 - p], s.hands[1 - p].bit_count())[0]
        agent._plan = (s.face_up, s.melds[p], lay)
    return agent.choose(PlayerView(s, p))


def _greedy_matches_on_random_play(rules: Rules, rounds: int, every: int, seed: int, choose=None) -> dict[int, int]:
    """Random play in N games (auto_reset); every ``every`` steps the JAX greedy action of each
    game is compared with GreedyAgent's (``greedy_actions``, asked for a random four fifths
    of the games: the others must get -1; or ``choose`` of the whole batch).  Returns the
    positions compared, by phase."""
    _, init, _, step = _compiled(rules, "random")
    key = jax.random.PRNGKey(seed)
    key, sub = jax.random.split(key)
    state = init(jax.random.split(sub, N))
    phases: dict[int, int] = {}
    rng = np.random.default_rng(seed)
    for _ in range(rounds):
        asked = rng.random(N) < 0.8 if choose is None else np.ones(N, bool)
        ours = np.asarray(_greedy(rules)(state, jnp.asarray(asked)) if choose is None else choose(state))
        host = jax.device_get(state)
        for i in range(N):
            if not asked[i]:
                assert ours[i] == -1, i
                continue
            s = to_game_state(_lane(host, i), rules)
            assert ours[i] == _reference_choice(s), (i, s.to_dict())
            phases[s.phase] = phases.get(s.phase, 0) + 1
        for _ in range(every):
            key, k1, k2 = jax.random.split(key, 3)
            state = step(state, act_randomly(k1, state.legal_action_mask), jax.random.split(k2, N))
    return phases


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_greedy_action_equals_greedy_agent_on_random_play(rules):
    phases = _greedy_matches_on_random_play(rules, rounds=15, every=5, seed=40 + rules.flags)
    assert sum(phases.values()) >= 500  # of 15 * 48 = 720, four fifths asked
    assert min(phases.get(ph, 0) for ph in (game.OFFER, game.MELD, game.DISCARD)) >= 20
    if rules.forcing:
        assert phases.get(game.FORCE_DECISION, 0) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_greedy_action_equals_greedy_agent_on_many_positions(rules):
    phases = _greedy_matches_on_random_play(rules, rounds=100, every=3, seed=400 + rules.flags)
    assert sum(phases.values()) >= 3500  # of 4800


@pytest.mark.slow
def test_greedy_action_of_one_state_vmapped_equals_the_agent():
    """greedy_action (one state, the batched bot on a batch of one) under jax.vmap."""
    from agents.greedy.greedy_jax import greedy_action

    phases = _greedy_matches_on_random_play(FORCING, 20, 4, seed=77, choose=jax.jit(jax.vmap(greedy_action)))
    assert sum(phases.values()) == 20 * N


def test_greedy_actions_rejects_a_bad_where():
    from agents.greedy.greedy_jax import greedy_actions

    state = _compiled(STANDARD, "random")[1](jax.random.split(jax.random.PRNGKey(0), N))
    with pytest.raises(ValueError, match="one bool per game"):
        greedy_actions(state, jnp.ones(N + 1, bool))


def _greedy_games(rules: Rules, seed: int) -> int:
    """N games greedy against greedy in JAX and in the scalar engine from the same deals (a
    GreedyAgent per seat, keeping its own plans), compared move by move to the end."""
    from agents.base import PlayerView
    from agents.greedy.greedy import GreedyAgent

    _, init, step, _ = _compiled(rules, "random")
    choose = _greedy(rules)
    state = init(jax.random.split(jax.random.PRNGKey(seed), N))
    host = jax.device_get(state)
    scalar = [_scalar_twin(_lane(host, i), rules) for i in range(N)]
    seats = [[GreedyAgent(), GreedyAgent()] for _ in range(N)]
    moves = 0
    while not all(s.is_terminal() for s in scalar):
        ours = np.asarray(choose(state, jnp.ones(N, bool)))
        playing = [not s.is_terminal() for s in scalar]
        for i, s in enumerate(scalar):
            if not playing[i]:
                assert host.terminated[i] and ours[i] == -1, i
                continue
            p = s.player
            assert ours[i] == seats[i][p].choose(PlayerView(s, p)), (i, s.to_dict())
            s.apply(int(ours[i]))
            moves += 1
        state = step(state, jnp.asarray(np.maximum(ours, 0)))
        host = jax.device_get(state)
        for i, s in enumerate(scalar):
            if playing[i]:
                assert bool(host.terminated[i]) == s.is_terminal(), i
                assert tuple(host.rewards[i]) == (s.returns() if s.is_terminal() else (0.0, 0.0)), i
                assert to_game_state(_lane(host, i), rules).to_dict() == s.to_dict(), i
    return moves


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_greedy_against_greedy_equals_the_scalar_games(rules):
    assert _greedy_games(rules, seed=50 + rules.flags) >= N * 20


# ---------------------------------------------------------------- pgx.api_test's checks


def test_pgx_api_test_refuses_only_our_env_id():
    """``pgx.api_test`` admits only Pgx's own games: its first state check asserts that the
    env id is one of Pgx's ``EnvId`` literals.  The checks that apply are the test below."""
    with pytest.raises(AssertionError) as err:
        pgx.api_test(Conquian(), num=1)
    failed_at = str(err.traceback[-1].statement)
    assert "state.env_id in get_args(EnvId)" in failed_at, failed_at


_PGX_PUBLIC = {"current_player", "observation", "rewards", "terminated", "truncated", "legal_action_mask"}


def _pgx_state_checks(env, state) -> None:
    """pgx.api_test's per-state checks (``_validate_state``, ``_validate_current_player``,
    ``_validate_legal_actions``), the env-id literal check left out: the id is ours."""
    assert state.env_id == env.id == "conquian"
    assert state.current_player.dtype == jnp.int32 and int(state.current_player) >= 0
    assert state.terminated.dtype == jnp.bool_ and state.rewards.dtype == jnp.float32
    assert state.legal_action_mask.dtype == jnp.bool_
    assert {k for k in state.__dict__ if not k.startswith("_")} <= _PGX_PUBLIC
    if bool(state.terminated):  # any action is legal there (and does nothing)
        assert bool(state.legal_action_mask.all())


@pytest.mark.slow  # two more compilations of init and step (unbatched and batched)
@pytest.mark.parametrize("use_key", [True, False])
def test_passes_the_checks_of_pgx_api_test_that_apply(use_key):
    """pgx.api_test_single and api_test_batch, as Pgx runs them on its own games, less the
    env-id literal and the SVG drawing (Pgx draws its own games only), and with one state's
    random action drawn as a batch of one, plus the items its
    docstring lists: stepping a terminal state changes nothing and rewards 0, the two
    players' observations differ, an illegal action ends the game with a negative reward."""
    env = Conquian(forcing=use_key)  # the variant too
    init, step, observe = jax.jit(env.init), jax.jit(env.step), jax.jit(env.observe)
    rng = jax.random.PRNGKey(849020)
    for _ in range(4):
        rng, subkey = jax.random.split(rng)
        state = init(subkey)
        _pgx_state_checks(env, state)
        assert bool(state.legal_action_mask.any()) and int(state._step_count) == 0
        assert bool((state.rewards == 0).all())
        assert not np.array_equal(observe(state, 0), observe(state, 1))
        steps = 0
        while not bool(state.terminated):
            rng, k1, k2 = jax.random.split(rng, 3)
            # act_randomly draws along axis 1: one state's mask goes in as a batch of one (pgx's
            # own api_test_single passes it unbatched, which jax 0.10 refuses, on Pgx's games too)
            action = act_randomly(k1, state.legal_action_mask[None])[0]
            state = step(state, action, k2 if use_key else None)
            steps += 1
            assert int(state._step_count) == steps
            _pgx_state_checks(env, state)
            if not bool(state.terminated):
                assert bool((state.rewards == 0).all())
        assert float(state.rewards.sum()) == 0.0  # +1 / -1, or a draw
        after = step(state, jnp.int32(0), rng if use_key else None)
        assert bool((after.rewards == 0).all()) and bool(after.terminated)
        assert int(after._step_count) == steps and bool(after.legal_action_mask.all())
    # an illegal action: the game ends, its player loses
    state = init(jax.random.PRNGKey(3))
    illegal = int(np.flatnonzero(~np.asarray(state.legal_action_mask))[0])
    mover = int(state.current_player)
    state = step(state, jnp.int32(illegal), jax.random.PRNGKey(4) if use_key else None)
    assert bool(state.terminated) and float(state.rewards[mover]) == -1.0
    # api_test_batch: vmapped random play until every game of the batch has ended
    binit, bstep = jax.jit(jax.vmap(env.init)), jax.jit(jax.vmap(env.step))
    rng = jax.random.PRNGKey(9999)
    for _ in range(2):
        rng, subkey = jax.random.split(rng)
        state = binit(jax.random.split(subkey, 4))
        while not bool(state.terminated.all()):
            rng, k1, k2 = jax.random.split(rng, 3)
            action = act_randomly(k1, state.legal_action_mask)
            state = bstep(state, action, jax.random.split(k2, 4) if use_key else None)
        assert bool(state.legal_action_mask.all())


@pytest.mark.slow  # compiles the whole PPO update (about half a minute on the CPU)
def test_example_jax_ppo_runs_with_the_jax_extra_alone():
    """examples/jax_ppo.py needs optax, which the [jax] extra installs (make test-jax's venv
    has [jax,fast] and pytest only)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    args = ["--num-envs", "8", "--num-steps", "8", "--updates", "2", "--chunk", "1", "--epochs", "1"]
    args += ["--minibatches", "2", "--hidden", "16"]
    out = subprocess.run(
        [sys.executable, str(root / "examples" / "jax_ppo.py"), *args],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=900,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [line.split() for line in out.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [(int(r[0]), int(r[1])) for r in rows] == [(1, 64), (2, 128)], out.stdout  # update, decisions
