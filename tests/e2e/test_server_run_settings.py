"""``server run``'s own settings, the bind address and the numbers, as a user gives them: an empty host is the
default (never every interface), an address the Server cannot listen on and a number that is not finite stop it
before its banner with one line naming the setting (exit 2), and a value from the settings file is named by its
key. Real ``powercontext`` processes; the running ones are real Servers on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import httpx
import pytest

from tests import forked
from tests.support import free_port, stop_process, wait_until


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    return {**base, "POWERCONTEXT_EMBEDDINGS": "none", **(extra or {})}


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return forked.run([*forked.POWERCONTEXT, *args], timeout=60, env=_env(env))


def _refused(result: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The one line a refused start prints (no banner, no uvicorn line, no traceback)."""
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def _banner_of_a_running_server(tmp_path: Path, args: tuple[str, ...], env: dict[str, str]) -> tuple[str, int]:
    """Start ``server run ARGS``, wait until it answers on loopback, and return its banner line and port, checking
    on the way that it does not listen on IPv6 loopback (as it would when bound to every interface)."""
    port = free_port()
    log = tmp_path / "server.log"
    command = ["server", "run", "--db", str(tmp_path / "pc.db"), "--port", str(port), *args]
    process = forked.start_powercontext(command, stderr=log, env=_env(env))
    try:

        def ready() -> bool:
            try:
                return process.poll() is not None or httpx.get(f"http://127.0.0.1:{port}/health/ready").is_success
            except httpx.TransportError:
                return False

        assert wait_until(ready, timeout=60, interval=0.1), _text(log)
        assert process.poll() is None, _text(log)
        if _ipv6_loopback():
            with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as client, pytest.raises(ConnectionRefusedError):
                client.connect(("::1", port))
    finally:
        stop_process(process)
    banner = [line for line in _text(log).splitlines() if line.startswith("PowerContext on ")]
    assert len(banner) == 1, _text(log)
    return banner[0], port


@pytest.mark.parametrize(
    ("args", "variables", "file"),
    [
        ((), {"POWERCONTEXT_HOST": ""}, None),
        ((), {"POWERCONTEXT_HOST": "  "}, None),
        (("--host", ""), {}, None),
        ((), {}, 'host = ""\n'),
    ],
    ids=["empty-variable", "blank-variable", "empty-option", "empty-file-value"],
)
def test_an_empty_host_is_the_default_loopback_address_not_every_interface(
    tmp_path: Path, args: tuple[str, ...], variables: dict[str, str], file: str | None
) -> None:
    if file is not None:
        config = tmp_path / "pc.toml"
        config.write_text(file, encoding="utf-8")
        variables = {**variables, "POWERCONTEXT_CONFIG": str(config)}
    banner, port = _banner_of_a_running_server(tmp_path, args, variables)
    assert banner.startswith(f"PowerContext on http://127.0.0.1:{port}  "), banner
    # config show agrees with what the Server bound.
    shown = _run("config", "show", "--json", env=variables)
    assert shown.returncode == 0, shown.stderr
    host = next(row for row in json.loads(shown.stdout)["settings"] if row["key"] == "host")
    assert (host["value"], host["source"]) == ("127.0.0.1", "default")


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_an_ipv6_host_is_written_in_brackets_in_the_banner(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    command = ["server", "run", "--db", str(tmp_path / "pc.db"), "--port", str(port)]
    process = forked.start_powercontext(command, stderr=log, env=_env({"POWERCONTEXT_HOST": "::1"}))
    try:
        banner = f"PowerContext on http://[::1]:{port}  "
        assert wait_until(lambda: banner in _text(log) or process.poll() is not None, timeout=60), _text(log)
        assert process.poll() is None, _text(log)
    finally:
        stop_process(process)


@pytest.mark.parametrize(
    ("args", "variables", "says"),
    [
        ((), {"POWERCONTEXT_HOST": "not.a.host.invalid"}, "error: POWERCONTEXT_HOST: 'not.a.host.invalid' names no"),
        ((), {"POWERCONTEXT_HOST": "192.0.2.1"}, "error: POWERCONTEXT_HOST: 192.0.2.1 is not an address of this"),
        ((), {"POWERCONTEXT_HOST": "[::1]"}, "write an IPv6 address without brackets (::1)"),
        (("--host", "bogus.invalid"), {}, "error: --host: 'bogus.invalid' names no address"),
        (("--host", "bogus.invalid"), {"POWERCONTEXT_HOST": "127.0.0.1"}, "error: --host: 'bogus.invalid'"),
    ],
)
def test_a_host_the_server_cannot_listen_on_is_refused_before_the_banner(
    tmp_path: Path, args: tuple[str, ...], variables: dict[str, str], says: str
) -> None:
    result = _run("server", "run", "--db", str(tmp_path / "pc.db"), "--port", str(free_port()), *args, env=variables)
    line = _refused(result)
    assert says in line, line
    assert not (tmp_path / "pc.db").exists()  # refused before the store was opened


def test_a_host_from_the_settings_file_is_named_by_its_key(tmp_path: Path) -> None:
    config = tmp_path / "pc.toml"
    config.write_text('host = "192.0.2.1"\n', encoding="utf-8")
    args = ("server", "run", "--db", str(tmp_path / "pc.db"), "--port", str(free_port()), "--config", str(config))
    line = _refused(_run(*args))
    assert line.startswith(f"error: config-file: {config}: host: 192.0.2.1 is not an address of this machine")


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("POWERCONTEXT_HYBRID_RRF_K", "inf"),
        ("POWERCONTEXT_HYBRID_RRF_K", "1e999"),
        ("POWERCONTEXT_HYBRID_VECTOR_WEIGHT", "inf"),
        ("POWERCONTEXT_HYBRID_VECTOR_WEIGHT", "nan"),
        ("POWERCONTEXT_HYBRID_FTS_WEIGHT", "Infinity"),
        ("POWERCONTEXT_EMBEDDINGS_COOLDOWN", "inf"),
        ("POWERCONTEXT_EXTRACTION_LEASE_S", "nan"),
    ],
)
def test_a_number_that_is_not_finite_is_refused_naming_the_variable(tmp_path: Path, variable: str, value: str) -> None:
    result = _run("server", "run", "--db", str(tmp_path / "pc.db"), "--port", str(free_port()), env={variable: value})
    assert _refused(result) == f"error: {variable} must be a finite number"


def test_a_bad_value_in_the_settings_file_names_the_file_and_key_not_the_variable(tmp_path: Path) -> None:
    config = tmp_path / "pc.toml"
    config.write_text('port = "abc"\n', encoding="utf-8")
    line = _refused(_run("server", "run", "--db", str(tmp_path / "pc.db"), "--config", str(config)))
    assert line == f"error: config-file: {config}: port must be a port number from 1 to 65535"
    # The same value in the variable is the variable's: the environment wins over the file.
    line = _refused(_run("server", "run", "--config", str(config), env={"POWERCONTEXT_PORT": "0"}))
    assert line == "error: POWERCONTEXT_PORT must be a port number from 1 to 65535"
