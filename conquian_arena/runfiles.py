"""The files of a tournament's run folder: each written whole or not at all, and game lines a resume can check.

* :func:`write_atomic` writes a file under a temporary name (``NAME.partial``) and renames it
  into place, so a kill leaves the old file or the new one, never half of one (a stale
  ``.partial`` is removed by :func:`remove_partials` on the next run).
* ``games.jsonl`` is appended to line by line (a kill can cut its last line short: the
  resume sets that line aside, naming it, and plays its game again).  Every line carries a
  ``check``: an HMAC-SHA256 of the rest of the line keyed by the run's secret, kept in
  :data:`KEY_FILE` beside it (:func:`sign_line`, :func:`check_problem`).

What the check can and cannot detect is said in ``docs/tournaments.md``: it catches a line
edited, forged or copied in by anyone who does not hold the key file (a line taken from
another run folder fails too, its key being another); whoever can read the key can sign
anything, so a run whose bots play a function of their seeds can also be re-played in
full on a resume (``--verify``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

#: the run's secret, beside games.jsonl: 64 hexadecimal digits and a newline
KEY_FILE = "games.key"
#: the field of a games.jsonl line that holds its check (the last field of the line)
CHECK_FIELD = "check"
#: the suffix of a file being written by :func:`write_atomic`
PARTIAL_SUFFIX = ".partial"

_SIGNED = re.compile(rb'\A(.*), "check": "([0-9a-f]{64})"\}\Z', re.S)
_KEY = re.compile(r"\A[0-9a-f]{64}\n?\Z")


def write_atomic(path: str | Path, data: bytes | str, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` whole or not at all: to ``path.partial``, then renamed into place
    (``mode``: the file's permission bits, set before the rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + PARTIAL_SUFFIX)
    with open(tmp, "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)


def remove_partials(folder: str | Path) -> list[Path]:
    """Remove the files a killed :func:`write_atomic` left in ``folder`` (and its ``replays/``); returns them."""
    folder = Path(folder)
    stale = [p for d in (folder, folder / "replays") if d.is_dir() for p in d.glob("*" + PARTIAL_SUFFIX)]
    for path in stale:
        path.unlink()
    return stale


def new_key() -> bytes:
    """A fresh secret for a run folder (32 random bytes, as hexadecimal)."""
    return secrets.token_hex(32).encode("ascii")


def read_key(folder: str | Path) -> bytes | None:
    """The run's secret in ``folder``, or None when there is no :data:`KEY_FILE`.  Raises
    ``ValueError`` for a key file that is not 64 hexadecimal digits."""
    path = Path(folder) / KEY_FILE
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:  # a folder in its place, no permission to read it
        raise ValueError(
            f"{path} cannot be read as a run key ({err.strerror}): the lines of games.jsonl cannot be checked. "
            "Remove it and resume with --verify (every game re-played), or choose another --out"
        ) from None
    if not _KEY.match(text.decode("ascii", "replace")):
        raise ValueError(
            f"{path} is not a run key (64 hexadecimal digits expected): the lines of games.jsonl cannot be "
            f"checked. Delete it and resume with --verify (every game re-played), or choose another --out"
        )
    return text.strip()


def write_key(folder: str | Path, key: bytes) -> None:
    """Keep ``key`` in ``folder``'s :data:`KEY_FILE`, readable by its owner only."""
    write_atomic(Path(folder) / KEY_FILE, key + b"\n", mode=0o600)


def _mac(key: bytes, text: bytes) -> str:
    return hmac.new(key, text, hashlib.sha256).hexdigest()


def sign_line(text: str, key: bytes) -> str:
    """A JSON object's text (``json.dumps``, ASCII) with its check added as the last field."""
    if not (text.startswith("{") and text.endswith("}")) or text == "{}":
        raise ValueError("only a non-empty JSON object's text can be signed")
    return f'{text[:-1]}, "{CHECK_FIELD}": "{_mac(key, text.encode("utf-8"))}"}}'


def check_problem(line: bytes, key: bytes) -> str | None:
    """Why ``line`` (a games.jsonl line, without its newline) does not carry a valid check for
    ``key``, or None when it does."""
    match = _SIGNED.match(line)
    if match is None:
        return f"a line without its check (the {CHECK_FIELD!r} field this run writes last on every line)"
    if not hmac.compare_digest(_mac(key, match.group(1) + b"}").encode("ascii"), match.group(2)):
        return (
            "a line whose check does not match it (edited, forged, or from another run folder: "
            f"only this run's {KEY_FILE} signs its lines)"
        )
    return None


__all__ = [
    "CHECK_FIELD",
    "KEY_FILE",
    "PARTIAL_SUFFIX",
    "check_problem",
    "new_key",
    "read_key",
    "remove_partials",
    "sign_line",
    "write_atomic",
    "write_key",
]
