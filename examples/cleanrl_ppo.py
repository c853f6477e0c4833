"""Masked PPO on Conquian in one file, in the style of CleanRL's ``ppo.py``: the file is
``conquian_train/cleanrl_ppo.py``, shipped in the package (``python -m conquian_train.cleanrl_ppo``);
this script runs it from the repository.

Run: ``python examples/cleanrl_ppo.py --total-steps 200000 --opponent random``; ``--help`` lists
every hyperparameter.
"""

from conquian_env.extras import one_line
from conquian_train.cleanrl_ppo import Args, build_agent, check_args, evaluate, main, make_envs, parse_args

__all__ = ["Args", "build_agent", "check_args", "evaluate", "main", "make_envs", "parse_args"]

if __name__ == "__main__":
    with one_line("examples/cleanrl_ppo.py"):
        main(parse_args())
