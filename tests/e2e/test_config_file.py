"""One TOML settings file (issue 41 item 9): ``powercontext.toml`` in the data directory or ``--config FILE``,
the environment winning, and ``config show`` saying where each value came from with secrets masked. The real
``powercontext`` process; the Server one is a real Server on loopback."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import httpx

from powercontext.config_file import SETTINGS
from tests.conftest import REPO_ROOT, LiveServer
from tests.e2e.test_cli import CLI
from tests.support import TLS, free_port, stop_process, wait_until

SECRET = "sk-file-secret-8841"


def _run(*args: str, env: dict[str, str] | None = None, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    if home is not None:  # the user data directory is $XDG_DATA_HOME/powercontext
        base["XDG_DATA_HOME"] = str(home)
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, env={**base, **(env or {})}, timeout=60, check=False
    )


def _shown(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, str]]:
    assert result.returncode == 0, result.stderr
    return {row["key"]: row for row in json.loads(result.stdout)["settings"]}


def test_config_show_names_each_values_source_and_masks_secrets(tmp_path: Path) -> None:
    config = tmp_path / "pc.toml"
    config.write_text(
        f'port = 9123\nlog_level = "debug"\nembeddings_api_key = "{SECRET}"\n'
        'generation_base_url = "https://user:hunter2@models.example/v1"\ninspector = false\n',
        encoding="utf-8",
    )
    result = _run("config", "show", "--config", str(config), "--json", env={"POWERCONTEXT_PORT": "9999"})
    rows = _shown(result)
    assert rows["port"] == {"key": "port", "variable": "POWERCONTEXT_PORT", "value": "9999", "source": "environment"}
    assert (rows["log_level"]["value"], rows["log_level"]["source"]) == ("debug", f"file {config}")
    assert (rows["inspector"]["value"], rows["inspector"]["source"]) == ("off", f"file {config}")
    assert (rows["host"]["value"], rows["host"]["source"]) == ("127.0.0.1", "default")
    assert rows["embeddings_api_key"]["value"] == "****"
    assert rows["generation_base_url"]["value"] == "https://user:****@models.example/v1"
    assert SECRET not in result.stdout and "hunter2" not in result.stdout
    human = _run("config", "show", "--config", str(config), env={"POWERCONTEXT_TOKEN": "tok-123"})
    assert human.returncode == 0 and "tok-123" not in human.stdout
    assert re.search(r"^token\s+\*\*\*\*  \(environment\)$", human.stdout, re.MULTILINE), human.stdout


def test_the_file_in_the_data_directory_is_read_without_naming_it(tmp_path: Path) -> None:
    (tmp_path / "powercontext").mkdir()
    (tmp_path / "powercontext" / "powercontext.toml").write_text('context_dates = "minute"\n', encoding="utf-8")
    rows = _shown(_run("config", "show", "--json", home=tmp_path))
    assert rows["context_dates"]["value"] == "minute"
    assert rows["context_dates"]["source"] == f"file {tmp_path / 'powercontext' / 'powercontext.toml'}"


def test_a_bad_file_is_a_usage_error_that_says_what_is_wrong(tmp_path: Path) -> None:
    config = tmp_path / "pc.toml"
    config.write_text("prot = 9000\n", encoding="utf-8")
    typo = _run("--config", str(config), "scope", "list")
    assert typo.returncode == 2
    assert typo.stderr.strip() == f"error: config-file: {config}: unknown key 'prot'; did you mean 'port'?"
    config.write_text("port = [", encoding="utf-8")
    broken = _run("server", "run", "--config", str(config))
    assert broken.returncode == 2 and broken.stderr.startswith(f"error: config-file: {config}: not valid TOML")
    missing = _run("config", "show", "--config", str(tmp_path / "nowhere.toml"))
    assert missing.returncode == 2 and "nowhere.toml: no such file" in missing.stderr
    config.write_text("port = 0\n", encoding="utf-8")
    out_of_range = _run("server", "run", "--config", str(config))
    assert out_of_range.returncode == 2
    assert out_of_range.stderr.strip() == f"error: config-file: {config}: port must be a port number from 1 to 65535"


def test_server_run_takes_its_settings_from_the_file(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "server.toml"
    config.write_text(f'port = {port}\ndb = "{tmp_path / "from-file.db"}"\ninspector = false\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    log = tmp_path / "server.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [*CLI, "server", "run", "--config", str(config)], stderr=stderr, env=env, cwd=REPO_ROOT
        )
    base = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            try:
                return process.poll() is not None or httpx.get(base + "/health/ready", verify=TLS).status_code == 200
            except httpx.TransportError:
                return False

        assert wait_until(ready, timeout=60, interval=0.1), log.read_text()
        assert process.poll() is None, log.read_text()
        assert httpx.get(base + "/inspector", verify=TLS).status_code == 404  # inspector = false
        assert (tmp_path / "from-file.db").exists()
    finally:
        stop_process(process)


def test_a_client_command_takes_its_url_from_the_file(server: LiveServer, tmp_path: Path) -> None:
    config = tmp_path / "client.toml"
    config.write_text(f'url = "{server.base_url}"\n', encoding="utf-8")
    listed = _run("--config", str(config), "scope", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert isinstance(json.loads(listed.stdout), list)


def test_every_variable_the_server_and_cli_read_can_come_from_the_file() -> None:
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (REPO_ROOT / "src" / "powercontext").rglob("*.py"))
    named = set(re.findall(r"\bPOWERCONTEXT_[A-Z0-9_]*[A-Z0-9]\b", sources))
    # The hook's and `powercontext mcp`'s own variables (they start without the CLI), the file's own variable,
    # the interpreter `hosts install` records, and the content markers (not variables).
    not_settings = {
        "POWERCONTEXT_CONFIG",
        "POWERCONTEXT_PYTHON",
        "POWERCONTEXT_SCOPE",
        "POWERCONTEXT_CAPTURE",
        "POWERCONTEXT_PREPARED_CONTEXT",
        "POWERCONTEXT_PREPARED_CONTEXT_V1",
    }
    hook = {n for n in named if n.startswith("POWERCONTEXT_HOOK_")}
    assert {s.variable for s in SETTINGS} == named - not_settings - hook


def test_a_data_directory_this_user_cannot_enter_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    """The default file's directory is another user's (a service started with root's HOME, say): whether the file
    exists cannot be known, so the command stops and says so, rather than crash or run without the settings."""
    locked = tmp_path / "locked"
    (locked / "powercontext").mkdir(parents=True)
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:  # root enters any directory: run as nobody, for whom pytest's 0700 root is closed
        prefix = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
    else:
        locked.chmod(0)
    try:
        base = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
        result = subprocess.run(
            [*prefix, *CLI, "config", "show"],
            capture_output=True,
            text=True,
            env={**base, "XDG_DATA_HOME": str(locked)},
            timeout=60,
            check=False,
        )
    finally:
        locked.chmod(0o700)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        f"error: config-file: {locked / 'powercontext' / 'powercontext.toml'}: cannot be read (Permission denied);"
        " name another with --config or POWERCONTEXT_CONFIG, or set HOME for this user"
    )


def test_an_unknown_log_level_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    expected = "POWERCONTEXT_LOG_LEVEL must be one of debug, info, warning, error, critical"
    port, db = str(free_port()), str(tmp_path / "pc.db")
    config = tmp_path / "pc.toml"
    config.write_text('log_level = "loud"\n', encoding="utf-8")
    refused = _run("server", "run", "--port", port, "--db", db, env={"POWERCONTEXT_LOG_LEVEL": "loud"})
    assert (refused.returncode, refused.stderr.strip()) == (2, f"error: {expected}"), refused.stderr[-2000:]
    # From the file, the value is named by the file and its key: the user never set the variable.
    in_file = f"error: config-file: {config}: " + expected.replace("POWERCONTEXT_LOG_LEVEL", "log_level")
    for refused in (
        _run("server", "run", "--port", port, "--db", db, "--config", str(config)),
        _run("config", "show", "--config", str(config)),
    ):
        assert (refused.returncode, refused.stderr.strip()) == (2, in_file), refused.stderr[-2000:]
    shown = _shown(_run("config", "show", "--json", env={"POWERCONTEXT_LOG_LEVEL": "WARNING"}))
    assert shown["log_level"]["value"] == "WARNING"
