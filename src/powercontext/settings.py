"""Runtime settings, read once by the composition root (never from deep inside)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from powercontext.code.confine import is_never_indexable
from powercontext.inference.config import EmbeddingConfig
from powercontext.inference.generation_config import InferenceSettings
from powercontext.recall.budget import DEFAULT_PREPARE_DEADLINE_MS
from powercontext.server.host_guard import ALLOWED_HOSTS_VARIABLE, BadHostEntry, HostRules
from powercontext.store.location import BadStoreUrl, StoreLocation, parse_store_url

DEFAULT_HOST = "127.0.0.1"


class SettingsError(ValueError):
    """A configuration value a person must fix; the message names the variable."""


DEFAULT_PORT = 8765


def default_db_path() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("powercontext", appauthor=False)) / "powercontext.db"


@dataclass(frozen=True)
class Settings:
    db_path: Path
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    log_level: str = "info"
    embeddings: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    # Seconds the provider is left alone after a failure (0: try again on the next search).
    embeddings_cooldown_s: float = 30.0
    hybrid_fts_weight: float = 1.0
    hybrid_vector_weight: float = 1.0
    hybrid_rrf_k: int = 60
    hybrid_fusion: str = "score"  # "score" (relative-score fusion) or "rrf" (reciprocal rank)
    # Families an operator turned off: prepare never reads them and capabilities does not list them.
    disabled_families: frozenset[str] = frozenset()
    # JSON file of principals (token SHA-256 and Scope grants); None: a single-user Server, no tokens.
    access_file: Path | None = None
    # The Context Inspector page at /inspector (POWERCONTEXT_INSPECTOR=off removes the route).
    inspector: bool = True
    # Directories the Server may index over HTTP (POWERCONTEXT_CODE_ROOTS); empty: none.
    code_roots: tuple[Path, ...] = ()
    # POWERCONTEXT_CODE_ALLOW_HARDLINKS: index and read files with more than one hard link.
    code_allow_hardlinks: bool = False
    # Host names the Server answers to besides loopback and its bind address (POWERCONTEXT_ALLOWED_HOSTS).
    allowed_hosts: tuple[str, ...] = ()
    # Generation, rerank and expansion (POWERCONTEXT_GENERATION*, POWERCONTEXT_RERANK*, POWERCONTEXT_EXPANSION).
    inference: InferenceSettings = field(default_factory=InferenceSettings)
    # POWERCONTEXT_STORE / --store; None: the SQLite file at db_path.
    store: StoreLocation | None = None
    # POWERCONTEXT_PREPARE_DEADLINE_MS: one prepare's provider calls (embedding, expansion, rerank) together.
    prepare_deadline_ms: int = DEFAULT_PREPARE_DEADLINE_MS
    # How precisely each injected item shows when it was true (POWERCONTEXT_CONTEXT_DATES: off, day, minute).
    context_dates: str = "day"
    # How long a Server holds a claimed Source before another may extract it (POWERCONTEXT_EXTRACTION_LEASE_S).
    extraction_lease_s: float = 120.0
    # Which extracted writes wait in the review inbox (POWERCONTEXT_EXTRACTION_REVIEW): model, all or none.
    extraction_review: str = "model"

    def store_location(self) -> StoreLocation:
        """Where the store lives: the configured URL, else SQLite at ``db_path``."""
        return self.store or StoreLocation("sqlite", path=self.db_path)

    @classmethod
    def from_env(
        cls, db: str | None = None, host: str | None = None, port: int | None = None, store: str | None = None
    ) -> Settings:
        """Explicit arguments win over ``POWERCONTEXT_*`` environment variables, which win over defaults.

        The store is ``store`` (a URL), else ``db`` (a SQLite file), else ``POWERCONTEXT_STORE``, else
        ``POWERCONTEXT_DB``, else the SQLite file in the user data directory.
        """
        env = os.environ
        db_value = db or env.get("POWERCONTEXT_DB")
        store_value = store or (None if db else env.get("POWERCONTEXT_STORE"))
        return cls(
            db_path=Path(db_value).expanduser() if db_value else default_db_path(),
            store=_store(store_value, "--store" if store else "POWERCONTEXT_STORE"),
            host=_host(host, env),
            port=port or _port(env),
            log_level=_choice(env, "POWERCONTEXT_LOG_LEVEL", LOG_LEVELS, default="info"),
            embeddings=EmbeddingConfig.from_env(env),
            embeddings_cooldown_s=_number(env, "POWERCONTEXT_EMBEDDINGS_COOLDOWN", 30.0, minimum=0.0),
            hybrid_fts_weight=_number(env, "POWERCONTEXT_HYBRID_FTS_WEIGHT", 1.0, minimum=0.0),
            hybrid_vector_weight=_number(env, "POWERCONTEXT_HYBRID_VECTOR_WEIGHT", 1.0, minimum=0.0),
            hybrid_rrf_k=int(_number(env, "POWERCONTEXT_HYBRID_RRF_K", 60, minimum=1)),
            hybrid_fusion=_choice(env, "POWERCONTEXT_HYBRID_FUSION", ("score", "rrf")),
            disabled_families=_families(env.get("POWERCONTEXT_DISABLED_FAMILIES", "")),
            access_file=Path(env["POWERCONTEXT_ACCESS_FILE"]).expanduser()
            if env.get("POWERCONTEXT_ACCESS_FILE")
            else None,
            inspector=_switch(env, "POWERCONTEXT_INSPECTOR", default=True),
            code_roots=_code_roots(env.get("POWERCONTEXT_CODE_ROOTS", "")),
            code_allow_hardlinks=code_hardlinks_allowed(env),
            allowed_hosts=_allowed_hosts(env.get(ALLOWED_HOSTS_VARIABLE, "")),
            inference=InferenceSettings.from_env(env),
            prepare_deadline_ms=_milliseconds(env, "POWERCONTEXT_PREPARE_DEADLINE_MS", DEFAULT_PREPARE_DEADLINE_MS),
            context_dates=_choice(env, "POWERCONTEXT_CONTEXT_DATES", ("day", "off", "minute")),
            extraction_lease_s=_number(env, "POWERCONTEXT_EXTRACTION_LEASE_S", 120.0, minimum=1.0),
            extraction_review=_choice(env, "POWERCONTEXT_EXTRACTION_REVIEW", ("model", "all", "none")),
        )


def _host(explicit: str | None, env: Mapping[str, str]) -> str:
    """``--host``, else ``POWERCONTEXT_HOST``, else ``DEFAULT_HOST``, without surrounding blanks. An empty or blank
    value is unset, as for every other setting: given to the Server, the empty host binds every interface."""
    for value in (explicit, env.get("POWERCONTEXT_HOST")):
        if value and value.strip():
            return value.strip()
    return DEFAULT_HOST


def _port(env: Mapping[str, str]) -> int:
    raw = env.get("POWERCONTEXT_PORT", "").strip()
    if not raw:
        return DEFAULT_PORT
    if not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise SettingsError("POWERCONTEXT_PORT must be a port number from 1 to 65535")
    return int(raw)


def code_hardlinks_allowed(env: Mapping[str, str]) -> bool:
    """``POWERCONTEXT_CODE_ALLOW_HARDLINKS``: whether code indexing and exact reads accept a file with more
    than one hard link (by default refused: a hard link in a code root can name a file outside it)."""
    return _switch(env, "POWERCONTEXT_CODE_ALLOW_HARDLINKS", default=False)


def _allowed_hosts(raw: str) -> tuple[str, ...]:
    """Comma-separated ``name`` or ``name:port`` entries, checked now so a typo stops the Server at start-up."""
    entries = tuple(e.strip() for e in raw.split(",") if e.strip())
    try:
        HostRules(extra=entries)
    except BadHostEntry as exc:
        raise SettingsError(str(exc)) from None
    return entries


def _switch(env: Mapping[str, str], name: str, *, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("on", "true", "1"):
        return True
    if raw in ("off", "false", "0"):
        return False
    raise SettingsError(f"{name} must be on or off")


def _store(raw: str | None, name: str) -> StoreLocation | None:
    if raw is None or not raw.strip():
        return None
    try:
        location = parse_store_url(raw)
    except BadStoreUrl as exc:
        raise SettingsError(f"{name}: {exc}") from None
    return location


DISABLEABLE_FAMILIES = ("topic-memory", "experience", "profile", "code")


def _families(raw: str) -> frozenset[str]:
    names = frozenset(n.strip() for n in raw.split(",") if n.strip())
    unknown = names - set(DISABLEABLE_FAMILIES)
    if unknown:
        raise SettingsError(
            "POWERCONTEXT_DISABLED_FAMILIES takes a comma-separated list of " + ", ".join(DISABLEABLE_FAMILIES)
        )
    return names


def _code_roots(raw: str) -> tuple[Path, ...]:
    """``os.pathsep``-separated absolute directories (``~`` expanded); empty entries are skipped."""
    roots: list[Path] = []
    for entry in (e.strip() for e in raw.split(os.pathsep)):
        if not entry:
            continue
        root = Path(entry).expanduser()
        if not root.is_absolute():
            raise SettingsError(f"POWERCONTEXT_CODE_ROOTS takes absolute directories separated by {os.pathsep!r}")
        if is_never_indexable(os.path.abspath(root)) or is_never_indexable(os.path.realpath(root)):
            raise SettingsError("POWERCONTEXT_CODE_ROOTS may not list /proc, /sys, /dev or a directory in them")
        if not root.is_dir():
            raise SettingsError("POWERCONTEXT_CODE_ROOTS lists a path that is not an existing directory")
        roots.append(root)
    return tuple(roots)


# The Server's log levels, least to most severe (``warning`` hides the access log).
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...], default: str | None = None) -> str:
    """One of ``choices`` (``default``, else the first, when unset or blank)."""
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default or choices[0]
    if raw not in choices:
        raise SettingsError(f"{name} must be one of {', '.join(choices)}")
    return raw


def _number(env: Mapping[str, str], name: str, default: float, *, minimum: float) -> float:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number (got something else)") from None
    if not math.isfinite(value):  # inf would overflow int() (the RRF k); inf or nan weights make scores NaN
        raise SettingsError(f"{name} must be a finite number")
    if not value >= minimum:
        raise SettingsError(f"{name} must be at least {minimum:g}")
    return value


MAX_PREPARE_DEADLINE_MS = 600_000


def _milliseconds(env: Mapping[str, str], name: str, default: int) -> int:
    """A whole number of milliseconds from 1 to ``MAX_PREPARE_DEADLINE_MS``."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_PREPARE_DEADLINE_MS:
        raise SettingsError(f"{name} must be a whole number of milliseconds from 1 to {MAX_PREPARE_DEADLINE_MS}")
    return int(raw)
