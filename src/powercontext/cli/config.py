"""``powercontext config show``: every setting's effective value and where it came from, secrets masked."""

from __future__ import annotations

import os

import typer

from powercontext.cli.common import ConfigOption, JsonOption, print_json
from powercontext.cli.terminal import say

config_app = typer.Typer(no_args_is_help=True, help="Show the settings in effect (environment, file, defaults).")


@config_app.command("show")
def config_show(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Print each setting: its effective value, and whether it came from the environment, the file or the default.

    API keys, tokens and passwords are shown as ``****`` (and a password inside a URL too). A variable set in the
    environment wins over the file. The file was read when the command started (``--config`` names it).
    """
    from powercontext import config_file
    from powercontext.cli.common import checked_url
    from powercontext.cli.server import settings_from_options

    # What `server run` would refuse is refused here too, with its message and exit code; what it would default
    # to depends on what is installed (the local embedding model), so that default is the one it computes.
    settings = settings_from_options(None)
    if os.environ.get("POWERCONTEXT_URL", "").strip():
        checked_url(os.environ["POWERCONTEXT_URL"])
    computed = {"POWERCONTEXT_EMBEDDINGS": settings.embeddings.provider}
    path, _ = config_file.config_path(config)
    rows = []
    for setting in config_file.SETTINGS:
        value = os.environ.get(setting.variable, "").strip()
        if setting.variable in config_file.applied:
            source = f"file {config_file.applied[setting.variable]}"
        elif value:
            source = "environment"
        else:
            source, value = "default", computed.get(setting.variable, setting.default)
        shown = "****" if setting.secret and source != "default" else _without_password(value)
        rows.append({"key": setting.key, "variable": setting.variable, "value": shown, "source": source})
    if as_json:
        print_json({"file": str(path), "file_exists": path.is_file(), "settings": rows})
        return
    say(f"file: {path}" + ("" if path.is_file() else " (absent)"))
    width = max(len(r["key"]) for r in rows)
    for row in rows:
        say(f"{row['key']:<{width}}  {row['value']}  ({row['source']})")


def _without_password(value: str) -> str:
    """``scheme://user:****@host`` for a URL that carries a password; anything else unchanged."""
    scheme, sep, rest = value.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return value
    return f"{scheme}://{userinfo.split(':', 1)[0]}:****@{host}"
