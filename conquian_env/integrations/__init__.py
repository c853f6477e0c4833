"""Adapters for third-party RL libraries, each imported only when used.

* :mod:`conquian_env.integrations.rllib`: RLlib (new API stack): a ``MultiAgentEnv`` with
  the observation keys and dtypes of RLlib's action-masking RLModule (needs ``ray[rllib]``;
  the masked network and its checkpoint reader are :mod:`agents.networks.rllib_model`, the self-play
  PPO config :mod:`conquian_train.rllib`).
* :mod:`conquian_env.integrations.openspiel`: OpenSpiel: registers the Python game
  ``python_conquian`` for ``pyspiel.load_game`` (needs ``open_spiel``).
* :mod:`conquian_env.integrations.tianshou`: Tianshou 2.x: a ``PettingZooEnv`` for its
  multi-agent recipe that credits each seat with its own result, numeric infos built in.
* :mod:`conquian_env.integrations.agilerl`: AgileRL: each seat's transitions of a
  self-play AEC loop, as the TensorDicts AgileRL's replay buffers take.

Nothing here is imported by ``import conquian_env``: importing this package costs nothing,
and a library is imported only with the module that adapts it.  Examples: ``examples/``.
"""
