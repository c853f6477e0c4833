"""Third-party RL clients: RLlib (conquian_env.integrations.rllib, agents.networks.rllib_model,
agents.networks.rllib_bot, conquian_train.rllib), Tianshou, AgileRL, and the client examples in
examples/.

Each part is skipped when its library is not installed.  The RLlib tests share one local
Ray instance (two CPUs, no dashboard) and one short PPO training.
"""

from __future__ import annotations

import importlib.util
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _example(name: str):
    """Import examples/NAME.py as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass in it looks its module up while it is built
    spec.loader.exec_module(module)
    return module


def test_importing_the_env_imports_no_client_library():
    code = (
        "import sys, conquian_env, conquian_env.integrations\n"
        "bad = [m for m in ('ray', 'tianshou', 'agilerl', 'torch') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)


# ---------------------------------------------------------------- RLlib: the env, no Ray needed


@pytest.fixture(scope="module")
def rllib():
    """The three sides of RLlib: the env (conquian_env), the network and its reader (agents), the
    training config (conquian_train)."""
    pytest.importorskip("ray.rllib")
    pytest.importorskip("torch")
    from types import SimpleNamespace

    from agents.networks import rllib_model
    from conquian_env.integrations import rllib as env_side
    from conquian_train import rllib as train_side

    return SimpleNamespace(
        ConquianMultiAgentEnv=env_side.ConquianMultiAgentEnv,
        MaskedPPOTorchRLModule=rllib_model.MaskedPPOTorchRLModule,
        MODULE_ID=rllib_model.MODULE_ID,
        load_module=rllib_model.load_module,
        ppo_config=train_side.ppo_config,
    )


def test_rllib_own_pettingzoo_recipe_is_refused_with_the_fix(rllib):
    """RLlib's own recipe, PettingZooEnv(conquian_env.env()) with a PPOConfig, failed at build_algo()
    ("No default encoder config for obs space=Dict") or, flattened, trained on one-move games (masks
    ignored): it is refused where it starts, naming conquian_env.integrations.rllib."""
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    import conquian_env

    for make in (conquian_env.env, conquian_env.raw_env):
        with pytest.raises(TypeError, match="ignores the action mask.*conquian_env.integrations.rllib"):
            PettingZooEnv(make())
    env = conquian_env.env()  # reset from anywhere else is served as before
    env.reset(seed=0)
    assert env.agent_selection in env.agents


def test_rllib_module_construction_logs_no_deprecation(rllib):
    """Every construction of MaskedPPOTorchRLModule logged RLlib's "RLModule(config=...) has been
    deprecated" (RLlib's own __init__ builds the deprecated RLModuleConfig): no longer."""
    import logging

    from gymnasium import spaces
    from ray.rllib.algorithms.ppo.ppo_catalog import PPOCatalog

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    log = logging.getLogger("ray._common.deprecation")
    log.addHandler(handler)
    try:
        for _ in range(2):
            rllib.MaskedPPOTorchRLModule(
                observation_space=spaces.Dict(
                    {
                        "observations": spaces.Box(0.0, 1.0, (456,), np.float32),
                        "action_mask": spaces.Box(0.0, 1.0, (85,), np.float32),
                    }
                ),
                action_space=spaces.Discrete(85),
                model_config={"fcnet_hiddens": [8]},
                catalog_class=PPOCatalog,
            )
    finally:
        log.removeHandler(handler)
    assert not [r.getMessage() for r in records if "deprecated" in r.getMessage()]


def test_rllib_algorithm_modules_log_no_deprecation_in_a_fresh_process(rllib):
    """RLlib logs the notice once per process, from the first RLModule built: building an algorithm
    from ppo_config(), that is RLlib's MultiRLModule around ours, which a filter around our own
    constructor missed (the notice was logged on every training run and Algorithm load).  A fresh
    process, so that no earlier test has used up RLlib's one notice."""
    code = (
        "from conquian_env.integrations.rllib import ConquianMultiAgentEnv\n"
        "from conquian_train.rllib import ppo_config\n"
        "spec = ppo_config(hiddens=(8,)).get_multi_rl_module_spec(env=ConquianMultiAgentEnv())\n"
        "print(type(spec.build()).__name__)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "MultiRLModule"
    assert "deprecated" not in run.stderr, run.stderr


def _random_episode(env, seed: int):
    """Play one game with random legal actions; returns the per-step tuples."""
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    steps = []
    while True:
        assert len(obs) == 1, "only the player to move gets an observation"
        ((agent, o),) = obs.items()
        action = int(rng.choice(np.flatnonzero(o["action_mask"])))
        out = env.step({agent: action})
        steps.append((agent, o, action, *out))
        obs = out[0]
        if out[2]["__all__"]:
            return steps


def test_rllib_env_spaces_and_turns(rllib):
    import conquian_env

    env = rllib.ConquianMultiAgentEnv({"illegal_action": "raise", "first": 1})
    assert env.possible_agents == env.agents == ["player_0", "player_1"]
    space = env.get_observation_space("player_0")
    assert set(space.spaces) == {"observations", "action_mask"}
    assert space["observations"].dtype == np.float32 and space["observations"].shape == (456,)
    assert space["action_mask"].dtype == np.float32 and space["action_mask"].shape == (85,)
    assert env.get_action_space("player_1").n == 85

    aec = conquian_env.env()
    for seed in range(6):
        steps = _random_episode(env, seed)
        aec.reset(seed=seed, options={"first": 1})
        movers = set()
        for agent, o, action, _obs, _rewards, _terms, truncs, _infos in steps:
            assert agent == aec.agent_selection
            assert o["observations"].dtype == np.float32 and o["action_mask"].dtype == np.float32
            assert space.contains(o)
            ref = aec.observe(agent)
            np.testing.assert_array_equal(o["observations"], ref["observation"])
            np.testing.assert_array_equal(o["action_mask"], ref["action_mask"])
            aec.step(action)
            movers.add(agent)
            assert truncs == {"__all__": False}
        *_, last_obs, rewards, terms, _, infos = steps[-1]
        # both seats: their final reward, terminated, their final view (game over, no legal action)
        assert set(last_obs) == set(rewards) == set(infos) == {"player_0", "player_1"}
        assert terms == {"player_0": True, "player_1": True, "__all__": True}
        assert rewards == {a: float(aec.rewards[a]) for a in aec.possible_agents}
        assert sum(rewards.values()) == 0 and set(rewards.values()) <= {-1.0, 0.0, 1.0}
        assert all(not o["action_mask"].any() for o in last_obs.values())
        assert movers == {"player_0", "player_1"}
        # mid-game rewards are zero, and nobody is terminated before the end
        for *_, rewards, terms, _, _ in steps[:-1]:
            assert not any(rewards.values()) and terms == {"__all__": False}


def test_rllib_env_first_player_and_errors(rllib):
    env = rllib.ConquianMultiAgentEnv()  # first="random", drawn from the seed
    firsts = {next(iter(env.reset(seed=s)[0])) for s in range(20)}
    assert firsts == {"player_0", "player_1"}
    assert next(iter(env.reset(seed=3)[0])) == next(iter(rllib.ConquianMultiAgentEnv().reset(seed=3)[0]))
    with pytest.raises(ValueError, match="unknown env_config"):
        rllib.ConquianMultiAgentEnv({"forcng": True})
    with pytest.raises(ValueError, match="first"):
        rllib.ConquianMultiAgentEnv({"first": 2})
    obs, _ = env.reset(seed=0)
    other = "player_1" if "player_0" in obs else "player_0"
    with pytest.raises(ValueError, match="to move"):
        env.step({other: 0})


def test_rllib_illegal_action_penalized_or_raised(rllib):
    from conquian_env.game import IllegalActionError

    raising = rllib.ConquianMultiAgentEnv({"illegal_action": "raise", "first": 0})
    obs, _ = raising.reset(seed=0)
    illegal = int(np.flatnonzero(obs["player_0"]["action_mask"] == 0)[0])
    with pytest.raises(IllegalActionError):
        raising.step({"player_0": illegal})

    env = rllib.ConquianMultiAgentEnv({"first": 0})
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="illegal"):
        obs, rewards, terms, _, infos = env.step({"player_0": illegal})
    assert rewards == {"player_0": -1.0, "player_1": 1.0} and terms["__all__"]
    assert infos["player_0"]["illegal_action"] == 1 and infos["player_1"]["illegal_action"] == 0


def test_rllib_env_passes_rllibs_env_checker(rllib):
    """The checker steps an action drawn without the mask: with the default "penalize" that
    forfeits its throw-away game (with a warning) but passes; ppo_config turns it off."""
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_multiagent_environments(rllib.ConquianMultiAgentEnv())
    assert rllib.ppo_config(num_env_runners=0).disable_env_checking
    assert not rllib.ppo_config(num_env_runners=0, check_env=True).disable_env_checking


def test_rllib_episode_credits_the_result_to_both_seats(rllib):
    """Fed through RLlib's own MultiAgentEpisode, each seat gets one step per decision and
    its result on its own last action, whoever made the last move."""
    from ray.rllib.env.multi_agent_episode import MultiAgentEpisode

    env = rllib.ConquianMultiAgentEnv({"illegal_action": "raise"})
    for seed in range(8):
        steps = _random_episode(env, seed)
        episode = MultiAgentEpisode(
            observation_space=env.observation_spaces,
            action_space=env.action_spaces,
            agent_to_module_mapping_fn=lambda agent_id, episode: rllib.MODULE_ID,
        )
        first_agent, first_obs = steps[0][0], steps[0][1]
        episode.add_env_reset(observations={first_agent: first_obs}, infos={first_agent: {}})
        decisions = {"player_0": 0, "player_1": 0}
        for agent, _o, action, obs, rewards, terms, truncs, infos in steps:
            decisions[agent] += 1
            episode.add_env_step(
                observations=obs,
                actions={agent: action},
                rewards=rewards,
                infos=infos,
                terminateds=terms,
                truncateds=truncs,
            )
        assert episode.is_done
        final = steps[-1][4]
        for agent in ("player_0", "player_1"):
            sa = episode.agent_episodes[agent]
            assert len(sa) == decisions[agent]
            sa_rewards = list(sa.get_rewards())
            assert sa_rewards[-1] == final[agent] and not any(sa_rewards[:-1])
            assert sa.is_terminated


# ---------------------------------------------------------------- RLlib: training on a local Ray


@pytest.fixture(scope="module")
def ray_local(rllib):
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def trained(ray_local, rllib, tmp_path_factory):
    """One PPO iteration (400 env steps) with illegal actions raising: returns (algo, checkpoint)."""
    config = rllib.ppo_config(
        num_env_runners=0,
        num_envs_per_env_runner=2,
        train_batch_size=400,
        minibatch_size=100,
        num_epochs=1,
        hiddens=(64, 64),
        env_config={"illegal_action": "raise"},
        seed=0,
    )
    algo = config.build_algo()
    result = algo.train()
    path = tmp_path_factory.mktemp("rllib") / "ckpt"
    algo.save_to_path(str(path))
    yield algo, path, result
    algo.stop()


def test_rllib_ppo_iteration_trains_and_never_plays_a_masked_action(trained, rllib):
    import torch

    algo, _, result = trained
    assert result["env_runners"]["num_env_steps_sampled"] >= 400  # with illegal_action="raise"
    assert np.isfinite(result["learners"][rllib.MODULE_ID]["total_loss"])
    module = rllib.load_module(algo)
    assert isinstance(module, rllib.MaskedPPOTorchRLModule)
    env = rllib.ConquianMultiAgentEnv({"illegal_action": "raise"})
    gen = torch.Generator().manual_seed(0)
    for seed in range(3):
        obs, _ = env.reset(seed=100 + seed)
        done = False
        while not done:
            ((agent, o),) = obs.items()
            batch = {"obs": {k: torch.from_numpy(v[None]) for k, v in o.items()}}
            with torch.no_grad():
                logits = module.forward_exploration(batch)["action_dist_inputs"][0]
            probs = torch.softmax(logits, -1).numpy()
            assert probs[o["action_mask"] == 0].sum() < 1e-30
            action = int(torch.multinomial(torch.softmax(logits, -1), 1, generator=gen))
            assert o["action_mask"][action] == 1
            obs, _, terms, _, _ = env.step({agent: action})
            done = terms["__all__"]


def test_rllib_bot_plays_full_games_against_random(trained):
    pytest.importorskip("torch")
    from agents import make_agent
    from agents.networks.rllib_bot import RLlibAgent
    from conquian_arena import deal_for_seed, play_game

    _, path, _ = trained
    bots = [
        RLlibAgent(str(path)),
        make_agent(f"python:agents.networks.rllib_bot:RLlibAgent,path={path},deterministic=false"),
        make_agent(f"rllib:{path}", seed=3),  # the bot spec evaluate.py and conquian-play take
    ]
    bots.append(pickle.loads(pickle.dumps(bots[0])))  # tournament workers may get bots pickled
    random_bot = make_agent("random", seed=1)
    for i, bot in enumerate(bots):
        for g in range(4):
            hands, stock = deal_for_seed(10 * i + g)
            players = [bot, random_bot] if g % 2 == 0 else [random_bot, bot]
            record = play_game(players, hands=hands, stock=stock, seed=g)
            assert record.failure is None, record.failure
            assert record.moves > 10 and record.decisions[g % 2] > 0


def test_rllib_load_module_from_every_checkpoint_level(trained, rllib):
    algo, path, _ = trained
    obs = np.zeros(456, np.float32)
    mask = np.zeros(85, np.float32)
    mask[[3, 7]] = 1
    ref = rllib.load_module(algo)
    sources = [
        path,
        path / "learner_group" / "learner" / "rl_module",
        path / "learner_group" / "learner" / "rl_module" / rllib.MODULE_ID,
        algo.get_module(rllib.MODULE_ID),
    ]
    from agents.networks.rllib_bot import RLlibAgent

    expected = RLlibAgent(module=ref).logits(obs, mask)
    assert np.isfinite(expected[[3, 7]]).all() and np.isneginf(np.delete(expected, [3, 7])).all()
    for source in sources:
        got = RLlibAgent(module=rllib.load_module(source)).logits(obs, mask)
        np.testing.assert_allclose(got, expected, rtol=1e-5)
    from agents.registry import SpecError, make_agent

    with pytest.raises(SpecError, match="needs the checkpoint path"):
        make_agent("rllib")
    with pytest.raises(FileNotFoundError):
        rllib.load_module(path / "nowhere")
    with pytest.raises(ValueError, match="not an RLModule checkpoint"):
        rllib.load_module(path / "env_runner")
    with pytest.raises(ValueError, match="exactly one"):
        RLlibAgent()


class _CreatesFile:
    """Unpickled, it opens ``marker`` for writing: the file appears (a stand-in for any code)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _evil_checkpoint(path, tmp_path, where):
    """A copy of the checkpoint ``path`` with a payload in the shared module's ``where`` file."""
    import shutil

    copy = tmp_path / f"evil_{where}"
    shutil.copytree(path, copy)
    marker = tmp_path / f"marker_{where}"
    folder = copy / "learner_group" / "learner" / "rl_module" / "shared"
    file = folder / ("class_and_ctor_args.pkl" if where == "ctor" else "module_state.pkl")
    with open(file, "rb") as f:
        content = pickle.load(f)  # our own checkpoint, just written: trusted
    content["payload"] = _CreatesFile(marker)
    with open(file, "wb") as f:
        pickle.dump(content, f)
    return copy, folder, marker


def _rllib_logits(module):
    from agents.networks.rllib_bot import RLlibAgent

    return RLlibAgent(module=module).logits(np.zeros(456), np.ones(85))


@pytest.mark.parametrize("where", ["ctor", "state"])
def test_rllib_checkpoints_load_without_running_their_pickles(trained, rllib, tmp_path, where):
    from ray.rllib.core.rl_module.rl_module import RLModule

    from agents import make_agent

    _, path, _ = trained
    copy, folder, marker = _evil_checkpoint(path, tmp_path, where)
    try:
        RLModule.from_checkpoint(folder)
    except Exception:  # whatever RLlib makes of a file object in its state
        pass
    assert marker.exists(), "the payload is live: RLlib's own load ran it"
    marker.unlink()
    if where == "ctor":  # an extra entry in the constructor file is data we never look at
        module = rllib.load_module(copy)
        bot = make_agent(f"rllib:{copy}")
        ref = RLModule.from_checkpoint(path / "learner_group" / "learner" / "rl_module")[rllib.MODULE_ID]
        ref = ref.state_dict()  # the clean checkpoint, read by RLlib
        assert list(module.state_dict()) == list(ref)
        assert all(np.array_equal(v.numpy(), ref[k].numpy()) for k, v in module.state_dict().items())
        assert np.array_equal(bot.logits(np.zeros(456), np.ones(85)), _rllib_logits(module))
    else:  # anything but arrays in the weights file is refused, unrun
        with pytest.raises(ValueError, match=r"(io|builtins)\.open is not a numpy array: refused"):
            rllib.load_module(copy)
    assert not marker.exists()


def test_rllib_weights_only_loader_matches_rllibs_own(trained, rllib):
    """Our rebuilt module computes exactly what RLlib's full load of the same (trusted) checkpoint does."""
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModule

    _, path, _ = trained
    theirs = RLModule.from_checkpoint(path / "learner_group" / "learner" / "rl_module")[rllib.MODULE_ID]
    ours = rllib.load_module(path)
    assert type(ours) is type(theirs) and ours.inference_only == theirs.inference_only
    rng = np.random.default_rng(0)
    batch = {
        "obs": {
            "observations": torch.from_numpy(rng.integers(0, 2, (300, 456)).astype(np.float32)),
            "action_mask": torch.from_numpy((rng.random((300, 85)) < 0.2).astype(np.float32)),
        }
    }
    ours.eval()
    theirs.eval()
    with torch.no_grad():
        a = ours.forward_inference(batch)["action_dist_inputs"]
        b = theirs.forward_inference(batch)["action_dist_inputs"]
    assert torch.equal(a, b)


def test_rllib_bad_checkpoints_get_errors_naming_the_fault(trained, rllib, tmp_path):
    import shutil

    _, path, _ = trained
    copy = tmp_path / "bad"
    shutil.copytree(path / "learner_group" / "learner" / "rl_module" / rllib.MODULE_ID, copy)
    with open(copy / "module_state.pkl", "rb") as f:
        state = pickle.load(f)
    with pytest.raises(ValueError, match="has no module 'other'"):
        rllib.load_module(path, "other")
    key = next(iter(state))
    for edit, message in (
        (lambda s: s.pop(key), "Missing key"),
        (lambda s: s.update({key: np.zeros((3, 3), np.float32)}), "size mismatch"),
        (lambda s: s.update({key: np.full(s[key].shape, np.nan, np.float32)}), "NaN"),
        (lambda s: s.update({key: "text"}), "not a float array"),
    ):
        bad = dict(state)
        edit(bad)
        with open(copy / "module_state.pkl", "wb") as f:
            pickle.dump(bad, f)
        with pytest.raises(ValueError, match=message):
            rllib.load_module(copy)
    (copy / "module_state.pkl").write_bytes(b"junk")
    with pytest.raises(ValueError, match="not a file of weights"):
        rllib.load_module(copy)


def test_example_rllib_selfplay(ray_local):
    stats = _example("rllib_selfplay").main(
        iterations=1, train_batch_size=300, minibatch_size=100, games=2, opponent="greedy"
    )
    assert stats["env_steps"] >= 300 and stats["failures"] == 0
    assert stats["opponent"] == "greedy" and stats["wins"] + stats["draws"] + stats["losses"] == 2


@pytest.mark.slow
def test_rllib_env_runner_actor_and_env_checker(ray_local, rllib):
    """Sampling in a separate env-runner actor, with RLlib's env checker on."""
    config = rllib.ppo_config(
        num_env_runners=1,
        num_envs_per_env_runner=2,
        train_batch_size=400,
        minibatch_size=100,
        num_epochs=1,
        check_env=True,
        seed=1,
    )
    algo = config.build_algo()
    try:
        for _ in range(2):
            result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled"] >= 400
    finally:
        algo.stop()


@pytest.mark.slow
def test_example_rllib_selfplay_script(tmp_path):
    pytest.importorskip("ray.rllib")
    out = tmp_path / "ckpt"
    subprocess.run(
        [sys.executable, str(EXAMPLES / "rllib_selfplay.py"), "--iterations", "2", "--out", str(out)],
        check=True,
        cwd=ROOT,
        timeout=600,
    )
    assert (out / "learner_group" / "learner" / "rl_module" / "shared").is_dir()


# ---------------------------------------------------------------- Tianshou


def _tianshou_credit(make_env, episodes: int, seed: int = 0) -> dict:
    """Tianshou's PettingZoo recipe (Collector, MultiAgentOffPolicyAlgorithm, random masked
    players) on make_env: per seat, the rewards its rows got (as the dispatcher credits them)
    and its real results (from the winner in the numeric infos of the episodes' last rows)."""
    from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
    from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv

    env = make_env()
    algo = MultiAgentOffPolicyAlgorithm(
        algorithms=[MARLRandomDiscreteMaskedOffPolicyAlgorithm(env.action_space) for _ in range(2)], env=env
    )
    envs = DummyVectorEnv([make_env, make_env])
    envs.seed([seed, seed + 1])
    buffer = VectorReplayBuffer(100_000, 2)
    collector = Collector(algo, envs, buffer)
    collector.reset()
    np.random.seed(seed)  # the random players draw from numpy's global generator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Tianshou's note on 2-d returns
        collector.collect(n_episode=episodes)
    rows = buffer[np.sort(buffer.sample_indices(0))]
    ids = rows.obs.agent_id
    winners = rows.info.winner[rows.terminated]
    out = {"terminated": int(rows.terminated.sum()), "rows": rows}
    for i, seat in enumerate(("player_0", "player_1")):
        out[seat] = {
            "credited": float(rows.rew[ids == seat][:, i].sum()),
            "real": float(sum(0 if w < 0 else (1 if w == i else -1) for w in winners)),
        }
    return out


@pytest.fixture(scope="module")
def tianshou():
    pytest.importorskip("tianshou")
    from conquian_env.integrations import tianshou

    return tianshou


def test_tianshou_own_recipe_is_refused_with_the_fix(tianshou):
    """Tianshou's own PettingZooEnv(conquian_env.env()) credited each game's result to the last
    mover only, silently (in 29 of 29 decided games the loser's rows summed to 0): it is refused
    at construction, naming the replacement."""
    from tianshou.env import PettingZooEnv

    import conquian_env

    for make in (conquian_env.env, conquian_env.raw_env):
        with pytest.raises(TypeError, match="last move only.*ConquianTianshouEnv"):
            PettingZooEnv(make())
    env = conquian_env.env()  # any other caller of last() is served as before
    env.reset(seed=0)
    assert env.last()[0]["action_mask"].any() and env.last(False)[0] is None


def _tianshou_seat_rows(steps: int, seed: int) -> tuple:
    """Tianshou's recipe (Collector, MultiAgentOffPolicyAlgorithm, random masked players) on
    one ConquianTianshouEnv with a SeatReplayBuffer: (the Collector's rows, the learn rows)."""
    from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
    from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
    from tianshou.data import Collector
    from tianshou.env import DummyVectorEnv

    from conquian_env.integrations.tianshou import ConquianTianshouEnv, SeatReplayBuffer

    env = ConquianTianshouEnv()
    algo = MultiAgentOffPolicyAlgorithm(
        algorithms=[MARLRandomDiscreteMaskedOffPolicyAlgorithm(env.action_space) for _ in range(2)], env=env
    )
    envs = DummyVectorEnv([ConquianTianshouEnv])
    envs.seed([seed])
    buffer = SeatReplayBuffer(100_000, 1)
    collector = Collector(algo, envs, buffer)
    collector.reset()
    np.random.seed(seed)
    collector.collect(n_step=steps)
    return buffer[np.arange(len(buffer))], buffer.learn[np.arange(len(buffer.learn))]


def _expected_seat_transitions(rows) -> set:
    """Each seat's decisions paired with its own next observation, computed from the stream of
    env steps (games split at ``terminated``): (seat, obs, act, obs_next, reward, terminated)."""
    out = set()
    game_start = 0
    for end in np.flatnonzero(rows.terminated):
        game = range(game_start, end + 1)
        winner = int(rows.info.winner[end])
        for s, seat in enumerate(("player_0", "player_1")):
            mine = [i for i in game if rows.obs.agent_id[i] == seat]
            decisions = [i for i in mine if rows.obs.mask[i].any()]
            closing = [i for i in mine if not rows.obs.mask[i].any()]
            result = 0.0 if winner < 0 else (1.0 if winner == s else -1.0)
            for j, i in enumerate(decisions):
                last = j == len(decisions) - 1
                nxt = decisions[j + 1] if not last else (closing[0] if closing else i)
                reward = result if last else 0.0
                out.add((seat, rows.obs.obs[i].tobytes(), int(rows.act[i]), rows.obs.obs[nxt].tobytes(), reward, last))
        game_start = end + 1
    return out


@pytest.mark.parametrize("steps", [600, pytest.param(3000, marks=pytest.mark.slow)])
def test_tianshou_seat_buffer_learns_from_each_seats_own_next_observation(tianshou, steps):
    rows, learn = _tianshou_seat_rows(steps, seed=steps)
    assert rows.terminated.sum() >= steps // 100
    # the Collector's rows, as Tianshou stores them: a third pair a decision with the other seat's view
    assert np.mean(rows.obs.agent_id != rows.obs_next.agent_id) > 0.2
    # the learn rows: each seat's own next observation, its result on its last decision only
    assert (learn.obs.agent_id == learn.obs_next.agent_id).all()
    seat_col = (learn.obs.agent_id == "player_1").astype(int)
    reward = learn.rew[np.arange(len(learn)), seat_col]
    assert (learn.rew.sum(axis=1) == reward).all() and (reward[~learn.terminated] == 0).all()
    assert learn.obs.mask.any(axis=1).all(), "closing steps are no decisions"
    got = {
        (seat, o.tobytes(), int(a), n.tobytes(), float(r), bool(t))
        for seat, o, a, n, r, t in zip(
            learn.obs.agent_id, learn.obs.obs, learn.act, learn.obs_next.obs, reward, learn.terminated, strict=True
        )
    }
    done_games = np.flatnonzero(rows.terminated)
    finished = rows.obs.agent_id[: done_games[-1] + 1]
    expected = _expected_seat_transitions(rows[: done_games[-1] + 1])
    assert got >= expected and len(expected) == np.sum(rows.obs.mask[: len(finished)].any(axis=1))
    # each seat's rewards sum to its results over the finished games
    winners = rows.info.winner[rows.terminated]
    for s, seat in enumerate(("player_0", "player_1")):
        real = sum(0 if w < 0 else (1 if w == s else -1) for w in winners)
        in_finished = [t for t in got if t[0] == seat and t in expected]
        assert sum(t[4] for t in in_finished) == real


def test_tianshou_env_credits_each_seat_its_results(tianshou):
    got = _tianshou_credit(tianshou.ConquianTianshouEnv, episodes=10)
    assert got["terminated"] >= 10
    for seat in ("player_0", "player_1"):
        assert got[seat]["credited"] == got[seat]["real"], (seat, got[seat])
    rows = got["rows"]
    # a row's reward is its own seat's, and only the last row of each seat in a game has one
    ids = rows.obs.agent_id
    own = rows.rew[np.arange(len(ids)), (ids == "player_1").astype(int)]
    np.testing.assert_array_equal(rows.rew.sum(axis=1), own)
    assert np.count_nonzero(own) <= 2 * got["terminated"]
    # the closing rows (no legal action) are the terminated ones; infos are numeric everywhere
    np.testing.assert_array_equal(~rows.obs.mask.any(axis=1), rows.terminated)
    assert set(rows.info.keys()) >= {"game_over", "result", "winner", "moves", "illegal_action"}
    assert rows.info.illegal_action.sum() == 0 and len(set(ids)) == 2


def test_tianshou_env_game_and_errors(tianshou):
    import conquian_env

    env = tianshou.ConquianTianshouEnv(first=1, illegal_action="raise")
    obs, info = env.reset(seed=3)
    assert obs["agent_id"] == "player_1" and obs["mask"].dtype == bool and info["game_over"] == 0
    aec = conquian_env.env()
    aec.reset(seed=3, options={"first": 1})
    rng = np.random.default_rng(0)
    credited = {"player_0": 0.0, "player_1": 0.0}
    terminated = False
    while not terminated:
        seat = obs["agent_id"]
        if obs["mask"].any():
            assert seat == aec.agent_selection
            np.testing.assert_array_equal(obs["obs"], aec.observe(seat)["observation"])
            action = int(rng.choice(np.flatnonzero(obs["mask"])))
            aec.step(action)
        else:  # the closing step of the seat that did not end the game
            action = 0
        obs, rew, terminated, truncated, info = env.step(action)
        credited[seat] += rew[0 if seat == "player_0" else 1]
        assert not truncated and set(info) == {"game_over", "result", "winner", "moves", "illegal_action"}
    assert credited == {a: float(aec.rewards[a]) for a in aec.possible_agents}
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)
    with pytest.raises(ValueError, match="first"):
        tianshou.ConquianTianshouEnv(first=2)
    assert {tianshou.ConquianTianshouEnv().reset(seed=s)[0]["agent_id"] for s in range(12)} == {"player_0", "player_1"}


def test_example_tianshou_dqn(tianshou, caplog):
    stats = _example("tianshou_dqn").main(steps=300, verbose=False)
    assert stats["env_steps"] >= 300 and stats["illegal"] == 0 and stats["updates"] > 0
    assert stats["learn_rows"] > 200 and stats["learn_rows_own_next"] == stats["learn_rows"]
    assert not [r for r in caplog.records if "Sequence has shape" in r.getMessage()]


@pytest.mark.slow
def test_example_tianshou_dqn_script():
    pytest.importorskip("tianshou")
    subprocess.run(
        [sys.executable, str(EXAMPLES / "tianshou_dqn.py"), "--steps", "500"], check=True, cwd=ROOT, timeout=600
    )


# ---------------------------------------------------------------- AgileRL


def _agilerl_games(games: int, assign) -> tuple[dict, dict]:
    """Random legal self-play games; ``assign(memory)`` returns (observe, act) callbacks that
    fill an AgileRL ReplayBuffer.  Returns (rewards credited per seat, real results per seat)."""
    from agilerl.components.replay_buffer import ReplayBuffer

    import conquian_env

    env = conquian_env.env()
    memory = ReplayBuffer(max_size=100_000)
    observe, act, owner = assign(memory)
    real = {"player_0": 0.0, "player_1": 0.0}
    rng = np.random.default_rng(0)
    for g in range(games):
        env.reset(seed=g, options={"first": g % 2})
        for seat in env.agent_iter():
            obs, reward, termination, truncation, _ = env.last()
            observe(seat, obs, reward, termination or truncation)
            if termination or truncation:
                real[seat] += float(reward)
                action = None
            else:
                action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
            act(seat, obs, action)
            env.step(action)
    return owner(memory), real


def test_agilerl_seat_transitions_credit_each_seat_its_results():
    pytest.importorskip("agilerl")
    from conquian_env.integrations.agilerl import SeatTransitions

    holder = {}

    def assign(memory):
        seats = holder["seats"] = SeatTransitions(memory)
        return seats.observe, seats.act, lambda mem: dict(seats.per_seat)

    credited, real = _agilerl_games(12, assign)
    assert credited == real and any(real.values())
    seats = holder["seats"]
    assert len(seats.memory) == seats.transitions > 12 * 20
    batch = seats.memory.sample(8)
    assert batch["obs"].shape == (8, 456) and batch["obs"].dtype == torch_float32()
    assert batch["action"].shape == (8, 1) and batch["done"].shape == (8, 1)
    with pytest.raises(TypeError, match="add"):
        SeatTransitions(object())


def test_agilerl_tutorial_bookkeeping_takes_other_seats_states_seat_transitions_do_not():
    """AgileRL's two-player tutorial (Connect Four self-play DQN) stores player X's transition when
    the other player has moved: (state, action, the observation two env steps later), players
    alternating by count.  A Conquian turn is several decisions, so that next state is often
    another seat's view.  Replayed here on random games, into AgileRL's ReplayBuffer, next to
    :class:`SeatTransitions`, whose next state is always the acting seat's own next observation."""
    pytest.importorskip("agilerl")
    from collections import Counter

    from agilerl.components.replay_buffer import ReplayBuffer

    import conquian_env
    from conquian_env.integrations.agilerl import SeatTransitions, to_tensordict
    from conquian_env.transitions import Transition

    class Kept(ReplayBuffer):  # AgileRL's buffer, keeping what was added in order, to compare
        def add(self, data, *args, **kwargs):
            self.kept.append(data)
            return super().add(data, *args, **kwargs)

    env = conquian_env.env()
    rng = np.random.default_rng(5)
    tutorial, ours = Kept(max_size=100_000), Kept(max_size=100_000)
    tutorial.kept, ours.kept = [], []
    seats = SeatTransitions(ours)
    expected: Counter = Counter()  # (state, action, the seat's own next state) of every decision
    wrong = total = passes = decisions = 0
    for g in range(8):
        env.reset(seed=100 + g)
        steps: list[tuple[str, np.ndarray, int]] = []  # (seat, observation, action) of each decision
        final: dict[str, np.ndarray] = {}
        for seat in env.agent_iter():
            obs, reward, termination, truncation, _ = env.last()
            seats.observe(seat, obs, reward, termination or truncation)
            action = None
            if termination or truncation:
                final[seat] = obs["observation"].copy()
            else:
                action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
                steps.append((seat, obs["observation"].copy(), action))
            seats.act(seat, obs, action)
            env.step(action)
        for t, (seat, state, action) in enumerate(steps):
            later = [i for i in range(t + 1, len(steps)) if steps[i][0] == seat]
            own_next = steps[later[0]][1] if later else final[seat]
            expected[(state.tobytes(), action, own_next.tobytes())] += 1
            if t + 2 < len(steps):  # the tutorial's bookkeeping: the observation of decision t + 2
                tutorial.add(to_tensordict(Transition(state, None, action, 0.0, steps[t + 2][1], None, False)))
                total += 1
                wrong += not np.array_equal(steps[t + 2][1], own_next)
        decisions += len(steps)
        passes += sum(steps[t][0] != steps[t + 1][0] for t in range(len(steps) - 1))
    # a turn passes at about 4 decisions in 10 (38% under random play, issue 29): the tutorial's
    # count-based alternation gives most transitions a state that is not the seat's own next one
    assert 0.25 < passes / decisions < 0.5, passes / decisions
    assert wrong / total > 0.5, (wrong, total)
    # SeatTransitions: one transition per decision, its next state the acting seat's own next observation
    stored: Counter = Counter()
    for td in ours.kept:
        state = td["obs"][0].numpy().astype(np.int8)
        next_state = td["next_obs"][0].numpy().astype(np.int8)
        stored[(state.tobytes(), int(td["action"][0, 0]), next_state.tobytes())] += 1
    assert stored == expected and len(ours) == seats.transitions == decisions


def torch_float32():
    import torch

    return torch.float32


def test_agilerl_masked_action_is_legal():
    pytest.importorskip("agilerl")
    import conquian_env
    from conquian_env.integrations.agilerl import masked_action

    class Greedy:  # any object with AgileRL's get_action(obs, epsilon, action_mask=...) contract
        def get_action(self, obs, epsilon, action_mask):
            assert obs.shape == (1, 456) and action_mask.shape == (1, 85)
            return np.array([int(np.flatnonzero(action_mask[0])[-1])])

    env = conquian_env.env()
    env.reset(seed=0)
    obs = env.observe(env.agent_selection)
    assert obs["action_mask"][masked_action(Greedy(), obs)]
    with pytest.raises(ValueError, match="no legal action"):
        masked_action(Greedy(), {"observation": obs["observation"], "action_mask": np.zeros(85, np.int8)})


def test_example_agilerl_dqn():
    pytest.importorskip("agilerl")
    stats = _example("agilerl_dqn").main(steps=300, verbose=False)
    assert stats["decisions"] >= 300 and stats["illegal"] == 0 and stats["learn_calls"] > 0
    assert stats["transitions"] > 0


# ---------------------------------------------------------------- a CleanRL-style loop (torch only)


def test_example_cleanrl_ppo_learns_without_illegal_moves_and_reports_its_speed(capsys):
    """examples/cleanrl_ppo.py for a few thousand steps: the masks keep every move legal,
    the losses are finite, it prints and returns its steps per second, the same seed gives
    the same run, and its settings come from the command line."""
    pytest.importorskip("torch")
    pytest.importorskip("numba")
    ppo = _example("cleanrl_ppo")
    args = ppo.Args(total_steps=3072, num_envs=16, num_steps=64, eval_every=2048, eval_games=16, seed=3)
    stats = ppo.main(args)
    out = capsys.readouterr().out
    assert stats["steps"] == 3072 and stats["sps"] > 0
    assert f"SPS {stats['sps']:.0f}" in out and "eval step 2048 vs greedy: W/D/L " in out  # trained against random
    assert "decided games won" in out and all(0 <= e["decided_won"] <= 1 for e in stats["evaluations"])
    assert stats["illegal"] == 0 and all(e["illegal"] == 0 for e in stats["evaluations"])
    assert sum(stats["results"].values()) > 30  # games were finished, their results read from final_info
    assert [e["step"] for e in stats["evaluations"]] == [2048, 3072]
    assert all(e["win"] + e["draw"] + e["loss"] == 16 for e in stats["evaluations"])
    assert len(stats["losses"]) == 3
    for losses in stats["losses"]:
        assert all(np.isfinite(losses[k]) for k in ("policy_loss", "value_loss", "entropy", "approx_kl"))
    # deterministic under a seed (a shorter run, twice)
    small = dict(total_steps=512, num_envs=8, num_steps=32, eval_games=8, eval_every=0, seed=5)
    a, b = (ppo.main(ppo.Args(**small), verbose=False) for _ in range(2))
    assert a["losses"] == b["losses"] and a["evaluations"] == b["evaluations"] and a["results"] == b["results"]
    # the command line sets every field; bad settings are named
    parsed = ppo.parse_args(["--total-steps", "100", "--opponent", "greedy", "--no-anneal-lr", "--target-kl", "0.02"])
    assert parsed == ppo.Args(total_steps=100, opponent="greedy", anneal_lr=False, target_kl=0.02)
    with pytest.raises(ValueError, match="num_minibatches"):
        ppo.check_args(ppo.Args(num_envs=3, num_steps=3, num_minibatches=4))
    with pytest.raises(ValueError, match="observation must be 'raw' or 'meld'"):
        ppo.check_args(ppo.Args(observation="pixels"))


# ---------------------------------------------------------------- Gymnasium's own vector envs (next-step autoreset)


def _gym_vector_run(mode: str, steps: int, num_envs: int = 2, seed: int = 0) -> dict:
    """Gymnasium's own recipe: ``gymnasium.make_vec(..., vectorization_mode=mode)`` with
    actions sampled from ``info["action_mask"]``; checks every env's rewards and next
    observations around each autoreset, returns counts."""
    import gymnasium as gym

    import conquian_env  # noqa: F401  (registers the id)
    from conquian_env.wrappers import GAME_OVER_ACTION

    envs = gym.make_vec("conquian_env/Conquian-v0", num_envs=num_envs, vectorization_mode=mode, opponent="random")
    try:
        assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
        obs, info = envs.reset(seed=seed)
        rng = np.random.default_rng(seed)
        finished = np.zeros(num_envs, dtype=bool)  # the env ended its game on the previous step
        last_obs = obs.copy()
        games = {"win": 0, "draw": 0, "loss": 0}
        resets = 0
        for _ in range(steps):
            masks = info["action_mask"].astype(bool)
            assert masks.any(axis=1).all(), "every env, a finished one included, offers an action to sample"
            action = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
            obs, reward, terminated, truncated, info = envs.step(action)
            assert not truncated.any()
            for i in range(num_envs):
                if finished[i]:  # the autoreset step: a new deal, nothing earned, the action ignored
                    resets += 1
                    assert reward[i] == 0 and not terminated[i]
                    assert "_result" not in info or not info["_result"][i], "no result: a game begins"
                    assert not np.array_equal(obs[i], last_obs[i]), "the new deal's observation"
                elif terminated[i]:  # the game's end: the result, and the finished game's mask
                    result = info["result"][i]
                    games[result] += 1
                    assert reward[i] == {"win": 1.0, "draw": 0.0, "loss": -1.0}[result]
                    assert np.flatnonzero(info["action_mask"][i]).tolist() == [GAME_OVER_ACTION]
                else:
                    assert reward[i] == 0
            finished, last_obs = terminated.copy(), obs.copy()
        return {"games": games, "resets": resets}
    finally:
        envs.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_gymnasium_make_vec_masks_survive_the_autoreset_step(mode):
    """Under Gymnasium 1.x's next-step autoreset a finished env's mask offered nothing to
    sample (masked sampling raised at the step after a game's end): it offers GAME_OVER_ACTION."""
    got = _gym_vector_run(mode, steps=120)
    assert sum(got["games"].values()) >= 2 and got["resets"] >= 1


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_gymnasium_make_vec_few_thousand_steps(mode):
    got = _gym_vector_run(mode, steps=2000, num_envs=3, seed=1)
    assert sum(got["games"].values()) >= 40 and got["resets"] >= 40
    assert got["games"]["win"] and got["games"]["loss"]
