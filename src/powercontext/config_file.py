"""One TOML file for the settings otherwise given as ``POWERCONTEXT_*`` environment variables.

The file is ``powercontext.toml`` in the user data directory (beside the default store), or the one named by
``powercontext --config FILE`` / ``server run --config FILE`` / ``POWERCONTEXT_CONFIG``. Its keys are the
variables' names without the prefix, in lower case (``port = 9000`` is ``POWERCONTEXT_PORT=9000``). The
environment wins: a file value is used only where the variable is unset. It is applied once, at the start of a
``powercontext`` command, to that process's environment, so every reader of a variable (the Server's settings,
the seekdb password, ``code index --db``) sees the same value without being told about files.

Only the standard library is imported here: the CLI reads the file before every command.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

from powercontext.server_url import DEFAULT_URL

__all__ = [
    "SETTINGS",
    "ConfigFileError",
    "Setting",
    "apply_config_file",
    "as_written",
    "config_path",
    "read_config_file",
]

CONFIG_VARIABLE = "POWERCONTEXT_CONFIG"
FILE_NAME = "powercontext.toml"


class ConfigFileError(ValueError):
    """The file cannot be used: unreadable, not TOML, or a key or value it may not hold; the message says which."""


@dataclass(frozen=True)
class Setting:
    """One setting a file may hold: its variable, the default as the docs state it, and whether it is a secret."""

    variable: str
    default: str
    secret: bool = False

    @property
    def key(self) -> str:
        return self.variable.removeprefix("POWERCONTEXT_").lower()


# Every variable the Server and the CLI read. The agent-host hook and `powercontext mcp` start without the CLI
# (cli/entry.py) and read only their environment and the project's .powercontext.toml; their variables are not
# listed. tests/unit/test_config_file.py checks this list against the variables the sources name.
SETTINGS: tuple[Setting, ...] = (
    Setting("POWERCONTEXT_DB", "<user data dir>/powercontext.db"),
    Setting("POWERCONTEXT_STORE", "the SQLite file (POWERCONTEXT_DB)"),
    Setting("POWERCONTEXT_STORE_PASSWORD", "empty", secret=True),
    Setting("POWERCONTEXT_HOST", "127.0.0.1"),
    Setting("POWERCONTEXT_PORT", "8765"),
    Setting("POWERCONTEXT_LOG_LEVEL", "info"),
    Setting("POWERCONTEXT_EMBEDDINGS", "local if the embeddings extra is installed, else none"),
    Setting("POWERCONTEXT_EMBEDDINGS_BASE_URL", "none"),
    Setting("POWERCONTEXT_EMBEDDINGS_MODEL", "none"),
    Setting("POWERCONTEXT_EMBEDDINGS_DIMENSION", "none"),
    Setting("POWERCONTEXT_EMBEDDINGS_API_KEY", "none", secret=True),
    Setting("POWERCONTEXT_EMBEDDINGS_TIMEOUT", "2"),
    Setting("POWERCONTEXT_EMBEDDINGS_BATCH_SIZE", "64"),
    Setting("POWERCONTEXT_EMBEDDINGS_THREADS", "one per CPU"),
    Setting("POWERCONTEXT_EMBEDDINGS_BACKEND", "auto"),
    Setting("POWERCONTEXT_EMBEDDINGS_COOLDOWN", "30"),
    Setting("POWERCONTEXT_HYBRID_FUSION", "score"),
    Setting("POWERCONTEXT_HYBRID_FTS_WEIGHT", "1"),
    Setting("POWERCONTEXT_HYBRID_VECTOR_WEIGHT", "1"),
    Setting("POWERCONTEXT_HYBRID_RRF_K", "60"),
    Setting("POWERCONTEXT_DISABLED_FAMILIES", "none"),
    Setting("POWERCONTEXT_CONTEXT_DATES", "day"),
    Setting("POWERCONTEXT_INSPECTOR", "on"),
    Setting("POWERCONTEXT_CODE_ROOTS", "none"),
    Setting("POWERCONTEXT_CODE_ALLOW_HARDLINKS", "off"),
    Setting("POWERCONTEXT_ALLOWED_HOSTS", "none"),
    Setting("POWERCONTEXT_ACCESS_FILE", "none: single-user"),
    Setting("POWERCONTEXT_GENERATION", "none"),
    Setting("POWERCONTEXT_GENERATION_BASE_URL", "none"),
    Setting("POWERCONTEXT_GENERATION_MODEL", "none"),
    Setting("POWERCONTEXT_GENERATION_API_KEY", "none", secret=True),
    Setting("POWERCONTEXT_GENERATION_TIMEOUT", "10"),
    Setting("POWERCONTEXT_GENERATION_MAX_REQUESTS", "8"),
    Setting("POWERCONTEXT_GENERATION_SETTINGS", "{}"),
    Setting("POWERCONTEXT_RERANK", "off"),
    Setting("POWERCONTEXT_RERANK_MODEL", "the generation model"),
    Setting("POWERCONTEXT_RERANK_TIMEOUT", "the generation timeout"),
    Setting("POWERCONTEXT_RERANK_MAX_REQUESTS", "8"),
    Setting("POWERCONTEXT_RERANK_SETTINGS", "{}"),
    Setting("POWERCONTEXT_EXPANSION", "none"),
    Setting("POWERCONTEXT_PREPARE_DEADLINE_MS", "5000"),
    Setting("POWERCONTEXT_EXTRACTION_LEASE_S", "120"),
    Setting("POWERCONTEXT_EXTRACTION_REVIEW", "model"),
    Setting("POWERCONTEXT_URL", DEFAULT_URL),
    Setting("POWERCONTEXT_TOKEN", "none", secret=True),
)
_BY_KEY = {s.key: s for s in SETTINGS}
# Lists join as the variable does: the code roots with the path separator, the others with commas.
_PATH_LISTS = frozenset({"code_roots"})

# Which variables the file supplied in this process (variable -> file), for `config show`.
applied: dict[str, Path] = {}


def config_path(explicit: str | None = None, env: Mapping[str, str] = os.environ) -> tuple[Path, bool]:
    """The file to read and whether it was named (``--config``, else ``POWERCONTEXT_CONFIG``); a named file must
    exist, the default one (in the user data directory) may be absent."""
    named = explicit or env.get(CONFIG_VARIABLE, "").strip()
    if named:
        return Path(named).expanduser(), True
    from platformdirs import user_data_dir

    return Path(user_data_dir("powercontext", appauthor=False)) / FILE_NAME, False


def read_config_file(path: Path) -> dict[str, str]:
    """The file's settings as environment values (variable -> text); ``ConfigFileError`` for anything else."""
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    except UnicodeDecodeError:
        raise ConfigFileError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: not valid TOML ({exc})") from None
    values: dict[str, str] = {}
    for key, value in data.items():
        setting = _BY_KEY.get(key)
        if setting is None:
            near = difflib.get_close_matches(key, list(_BY_KEY), n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]!r}?" if near else "; `powercontext config show` lists the keys"
            raise ConfigFileError(f"{path}: unknown key {key!r}{hint}")
        values[setting.variable] = _as_text(key, value, path)
    return values


def _as_text(key: str, value: object, path: Path) -> str:
    """A TOML value as the variable's text: booleans on/off, lists joined, tables (``*_settings``) as JSON."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int | float | str):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return (os.pathsep if key in _PATH_LISTS else ",").join(value)
    if isinstance(value, dict) and key.endswith("_settings"):
        return json.dumps(value)
    raise ConfigFileError(f"{path}: {key} takes a string, a number, a boolean or a list of strings")


def _is_file(path: Path, named: bool) -> bool:
    """Whether ``path`` is a file; ``ConfigFileError`` when that cannot be known (a directory on its way this user
    may not enter): the file may hold settings the user counts on, so it is not taken as absent."""
    try:
        return path.is_file()
    except OSError as exc:
        where = "" if named else f"; name another with --config or {CONFIG_VARIABLE}, or set HOME for this user"
        raise ConfigFileError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__}){where}") from None


def apply_config_file(explicit: str | None = None, env: MutableMapping[str, str] = os.environ) -> Path | None:
    """Set, in ``env``, every variable the file holds and ``env`` lacks; return the file, or None if the default
    file is absent. ``ConfigFileError`` when the file is named but missing, or is malformed."""
    path, named = config_path(explicit, env)
    if not _is_file(path, named):
        if named:
            raise ConfigFileError(f"{path}: no such file")
        return None
    for variable, value in read_config_file(path).items():
        if value.strip() and not env.get(variable, "").strip():  # a blank value is unset, as a blank variable is
            env[variable] = value
            applied[variable] = path
    return path


_VARIABLE = re.compile(r"\bPOWERCONTEXT_[A-Z0-9_]*[A-Z0-9]\b")


def as_written(message: str) -> str:
    """A settings error in the terms the user wrote it in: where it names a variable the file supplied (the user
    never set that variable), the file and its key instead (``config-file: FILE: port must be ...``)."""
    from_file = [v for v in dict.fromkeys(_VARIABLE.findall(message)) if v in applied]
    if not from_file:
        return message
    for variable in from_file:
        message = re.sub(rf"\b{variable}\b", variable.removeprefix("POWERCONTEXT_").lower(), message)
    return f"config-file: {applied[from_file[0]]}: {message}"
