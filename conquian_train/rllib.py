"""Self-play PPO for RLlib's new API stack: :func:`ppo_config`, the whole ``PPOConfig``.

Both seats of :class:`conquian_env.integrations.rllib.ConquianMultiAgentEnv` play one shared,
masked policy (:class:`agents.networks.rllib_model.MaskedPPOTorchRLModule`); a checkpoint of the run
plays as the bot ``rllib:PATH`` (:class:`agents.networks.rllib_bot.RLlibAgent`).  Needs ``ray[rllib]``
and torch::

    import ray
    from conquian_train.rllib import ppo_config

    ray.init(num_cpus=2, include_dashboard=False)
    algo = ppo_config(num_env_runners=1).build_algo()
    for _ in range(10):
        result = algo.train()
    path = algo.save_to_path("runs/rllib")            # an algorithm checkpoint directory

``examples/rllib_selfplay.py`` is this with a command line.
"""

from __future__ import annotations

import functools
from typing import Any

from agents.networks.rllib_model import MODULE_ID, MaskedPPOTorchRLModule
from conquian_env.integrations.rllib import ConquianMultiAgentEnv

__all__ = ["ppo_config"]


def _set_torch_threads(threads: int, *args: Any, **kwargs: Any) -> None:
    import torch

    torch.set_num_threads(threads)


def _shared_policy(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    return MODULE_ID


def ppo_config(
    *,
    num_env_runners: int = 1,
    num_envs_per_env_runner: int = 8,
    train_batch_size: int = 4000,
    minibatch_size: int = 500,
    num_epochs: int = 4,
    lr: float = 3e-4,
    gamma: float = 1.0,
    entropy_coeff: float = 0.01,
    hiddens: tuple[int, ...] = (256, 256),
    env_config: dict[str, Any] | None = None,
    torch_threads: int | None = 1,
    check_env: bool = False,
    seed: int | None = None,
) -> Any:
    """An RLlib ``PPOConfig`` for self-play: both seats play one shared, masked policy.

    One RLModule (:data:`agents.networks.rllib_model.MODULE_ID`, a
    :class:`agents.networks.rllib_model.MaskedPPOTorchRLModule`, an MLP of
    ``hiddens``) plays ``player_0`` and ``player_1``; the learner runs in the main process on
    the CPU (``num_learners=0``), sampling in ``num_env_runners`` actors of one CPU each
    (0: in the main process), each stepping ``num_envs_per_env_runner`` games at once (its
    forward passes are batched over them: on two cores one env runner samples about 430 env
    steps/s with one game and about 2,000 with eight).  ``torch_threads`` (default 1;
    ``None`` leaves torch alone) is set in the main process and every env runner: on a
    small machine one thread per process is many times faster than torch's default.
    Change anything further on the returned config (``.training(...)``,
    ``.env_runners(...)``) before ``build_algo()``.

    RLlib's env checker is off (``check_env=False``): it steps a reset env with an action
    drawn from the whole ``Discrete(85)`` space, ignoring the mask, which with the default
    ``illegal_action="penalize"`` forfeits that throw-away game with an illegal-action
    warning in every env runner (and raises with ``illegal_action="raise"``).  The env
    passes the check otherwise (the tests run it).
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    config = (
        PPOConfig()
        .environment(ConquianMultiAgentEnv, env_config=dict(env_config or {}), disable_env_checking=not check_env)
        .framework("torch")
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=num_envs_per_env_runner,
            num_cpus_per_env_runner=1,
            rollout_fragment_length="auto",
        )
        .learners(num_learners=0, num_gpus_per_learner=0)
        .multi_agent(policies={MODULE_ID}, policy_mapping_fn=_shared_policy, policies_to_train=[MODULE_ID])
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    MODULE_ID: RLModuleSpec(
                        module_class=MaskedPPOTorchRLModule,
                        model_config={"fcnet_hiddens": list(hiddens), "vf_share_layers": False},
                    )
                }
            )
        )
        .training(
            train_batch_size_per_learner=train_batch_size,
            minibatch_size=minibatch_size,
            num_epochs=num_epochs,
            lr=lr,
            gamma=gamma,
            entropy_coeff=entropy_coeff,
        )
    )
    if torch_threads is not None:
        set_threads = functools.partial(_set_torch_threads, int(torch_threads))
        config = config.callbacks(on_algorithm_init=set_threads, on_environment_created=set_threads)
    if seed is not None:
        config = config.debugging(seed=seed)
    return config
