"""Runtime settings, read once by the composition root (never from deep inside)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
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

    @classmethod
    def from_env(cls, db: str | None = None, host: str | None = None, port: int | None = None) -> Settings:
        """Explicit arguments win over ``POWERCONTEXT_*`` environment variables, which win over defaults."""
        env = os.environ
        db_value = db or env.get("POWERCONTEXT_DB")
        return cls(
            db_path=Path(db_value).expanduser() if db_value else default_db_path(),
            host=host or env.get("POWERCONTEXT_HOST", DEFAULT_HOST),
            port=port or int(env.get("POWERCONTEXT_PORT", DEFAULT_PORT)),
            log_level=env.get("POWERCONTEXT_LOG_LEVEL", "info"),
        )
