"""What the console scripts share: a Ctrl-C or a closed pipe ends a command quietly."""

from __future__ import annotations

from collections.abc import Callable


def run_console(main_fn: Callable[[], int]) -> int:
    """Run a console script's ``main``: Ctrl-C ends it with status 130 and a word, a closed
    pipe (output piped into ``head``) quietly."""
    try:
        return main_fn()
    except KeyboardInterrupt:
        print("\ninterrupted")
        return 130
    except BrokenPipeError:
        return 0


__all__ = ["run_console"]
