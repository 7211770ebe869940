"""A loose access file stops the Server (as ssh refuses a loose ``authorized_keys``); credentials in a Server URL
are never printed back, by CLI errors, ``hosts doctor`` (text and ``--json``) or the SDK's errors."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests import forked
from tests.conftest import REPO_ROOT, LiveServer
from tests.e2e.test_cli import run_cli

ACCESS = json.dumps({"principals": [{"name": "a", "token_sha256": "0" * 64, "read": ["*"]}]})
PASSWORD = "s3cret-pass"


def start_server(tmp_path: Path, access: Path) -> tuple[int, str]:
    env = {"PATH": "/usr/bin:/bin", "POWERCONTEXT_ACCESS_FILE": str(access), "POWERCONTEXT_PORT": "9"}
    result = forked.run(
        [sys.executable, "-m", "powercontext", "server", "run", "--db", str(tmp_path / "x.db")],
        capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=60,
    )  # fmt: skip
    return result.returncode, result.stderr


@pytest.mark.parametrize(("mode", "who"), [(0o666, "group and others"), (0o620, "group"), (0o602, "others")])
def test_a_writable_access_file_stops_the_server_and_says_how_to_fix_it(tmp_path: Path, mode: int, who: str) -> None:
    path = tmp_path / "access.json"
    path.write_text(ACCESS, encoding="utf-8")
    path.chmod(mode)
    code, stderr = start_server(tmp_path, path)
    assert code == 2 and "Traceback" not in stderr
    assert f"error: POWERCONTEXT_ACCESS_FILE: {path} is writable by {who} (mode {mode:04o})" in stderr
    assert f"fix: chmod go-w {path}" in stderr


def test_an_access_file_in_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # no sticky bit: anyone could replace the file
    path = shared / "access.json"
    path.write_text(ACCESS, encoding="utf-8")
    path.chmod(0o600)
    code, stderr = start_server(tmp_path, path)
    assert code == 2 and f"its directory {shared} is writable by others" in stderr


@pytest.mark.parametrize(
    ("grants", "says"),
    [
        # A string, not a list: read as characters it held the pattern "*", and the token got every Scope.
        ({"write": "project:*"}, '"write" must be a list of Scope patterns'),
        ({"read": "project:*"}, '"read" must be a list of Scope patterns'),
        ({"delete": "*"}, '"delete" must be a list of Scope patterns'),
        ({"index": [7]}, '"index" must be a list of Scope patterns'),
        ({"read": ["proj*ect"]}, 'a pattern is an exact Scope id, a prefix ending in "*", or "*" alone'),
        ({"read": [""]}, 'a pattern is an exact Scope id'),
        ({"wrte": ["*"]}, 'unknown key(s) "wrte"'),  # a typo must not silently drop a grant
        ({"metrics": "yes"}, "metrics must be true or false"),
        ({"name": 7}, "needs a name and a token_sha256"),
    ],
)
def test_a_malformed_grant_stops_the_server_rather_than_grant_more(
    tmp_path: Path, grants: dict[str, object], says: str
) -> None:
    path = tmp_path / "access.json"
    path.write_text(json.dumps({"principals": [{"name": "s", "token_sha256": "0" * 64, **grants}]}), encoding="utf-8")
    path.chmod(0o600)
    code, stderr = start_server(tmp_path, path)
    assert code == 2 and "Traceback" not in stderr, stderr
    assert "error: POWERCONTEXT_ACCESS_FILE: principal 0" in stderr and says in stderr, stderr


def test_an_unknown_top_level_key_stops_the_server(tmp_path: Path) -> None:
    path = tmp_path / "access.json"
    path.write_text(json.dumps({"principals": json.loads(ACCESS)["principals"], "principal": []}), encoding="utf-8")
    path.chmod(0o600)
    code, stderr = start_server(tmp_path, path)
    assert code == 2 and 'unknown key(s) "principal"' in stderr, stderr


def _with_credentials(url: str) -> str:
    return url.replace("http://", f"http://alice:{PASSWORD}@", 1)


def test_cli_errors_never_repeat_url_credentials(tmp_path: Path) -> None:
    down = run_cli("memory", "list", "-s", "x", url=f"http://alice:{PASSWORD}@127.0.0.1:9")
    assert down.returncode == 5 and "no answer from http://***@127.0.0.1:9" in down.stderr
    no_scheme = run_cli("memory", "list", "-s", "x", "--url", f"alice:{PASSWORD}@127.0.0.1:9")
    assert no_scheme.returncode == 2
    for done in (down, no_scheme):
        assert PASSWORD not in done.stdout + done.stderr


def test_hosts_doctor_never_repeats_url_credentials(server: LiveServer, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(POWERCONTEXT_URL=_with_credentials(server.base_url), HOME=str(tmp_path), COLUMNS="200")
    for extra in ((), ("--json",)):
        done = forked.run(
            [sys.executable, "-m", "powercontext", "hosts", "doctor", *extra],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False,
        )  # fmt: skip
        assert PASSWORD not in done.stdout + done.stderr
        assert "http://***@127.0.0.1" in done.stdout


def test_the_sdk_error_never_repeats_url_credentials() -> None:
    from powercontext.client.errors import PowerContextError
    from powercontext.client.sync import SyncPowerContextClient

    with (
        SyncPowerContextClient(f"http://alice:{PASSWORD}@127.0.0.1:9") as client,
        pytest.raises(PowerContextError) as caught,
    ):
        client.list_scopes()
    assert PASSWORD not in str(caught.value) and "http://***@127.0.0.1:9" in str(caught.value)
