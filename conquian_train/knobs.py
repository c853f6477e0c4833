"""The knob builder of the training recipes: :mod:`conquian_arena.knobs`, the one builder of every
command's flags, under the name the recipes and older code import."""

from conquian_arena.knobs import (
    INT_LIMIT,
    add_flags,
    add_resume_flags,
    check,
    from_dict,
    knob,
    read_config,
    resumed,
    spec_fields,
    to_dict,
)

__all__ = [
    "INT_LIMIT",
    "add_flags",
    "add_resume_flags",
    "check",
    "from_dict",
    "knob",
    "read_config",
    "resumed",
    "spec_fields",
    "to_dict",
]
