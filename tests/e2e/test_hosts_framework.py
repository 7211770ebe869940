"""One host framework: what every host shares, and a hostile repository's attempts to turn install against the user.

Each test is one bug or one attack from issue 36, run through the real CLI in a throwaway HOME:

* uninstalling one host keeps ``.powercontext.toml`` while another installed host still reads it;
* ``--url`` is recorded for every host (it was dropped for OpenCode), and no committed file names it;
* ``doctor --host HOST`` runs only that host's checks (``--host opencode`` ran Claude Code's too);
* install then uninstall gives back the project and the user's host config exactly, for every host;
* an unknown host's error lists every registered host;
* a symlink planted where install used to put its temporary file is never written through;
* ``.claude`` linked to a directory outside the project is refused, nothing is written there;
* ``.mcp.json`` / ``.codex/hooks.json`` linked to a secrets file is refused: the secret is never read into a
  project file, printed by ``--dry-run`` or changed;
* for every host, each project file or directory install writes, planted as a link, is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from powercontext.hosts.registry import HOSTS
from tests import forked
from tests.e2e.test_hosts_cli import VENV_BIN

SECRET = "sk-ant-api03-SECRET-DO-NOT-LEAK"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root.resolve()


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("POWERCONTEXT_", "XDG_", "CODEX_", "CLAUDE_"))}
    clean.update(HOME=str(home), PATH=os.pathsep.join([VENV_BIN, "/usr/bin", "/bin"]))
    return clean


def pc(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return forked.run([*forked.POWERCONTEXT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def machine_settings(home: Path) -> dict[str, object]:
    data = json.loads((home / ".config" / "powercontext" / "hosts.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_uninstalling_claude_code_keeps_the_scope_file_opencode_still_reads(project: Path, env: dict[str, str]) -> None:
    for host in ("opencode", "claude-code"):
        done = pc("hosts", "install", host, "--scope", "project:shared", "--yes", cwd=project, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    gone = pc("hosts", "uninstall", "claude-code", cwd=project, env=env)
    assert gone.returncode == 0, gone.stderr
    assert (project / ".powercontext.toml").read_text() == 'scope_id = "project:shared"\n'
    assert str(project) in machine_settings(Path(env["HOME"]))["projects"]  # type: ignore[operator]
    # The last host out takes the shared files with it.
    assert pc("hosts", "uninstall", "opencode", cwd=project, env=env).returncode == 0
    assert not (project / ".powercontext.toml").exists()


@pytest.mark.parametrize("host", HOSTS)
def test_install_url_is_recorded_for_every_host(host: str, project: Path, env: dict[str, str]) -> None:
    url = "http://127.0.0.1:9"
    done = pc("hosts", "install", host, "--url", url, "--yes", cwd=project, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    entry = machine_settings(Path(env["HOME"]))["projects"][str(project)]  # type: ignore[index]
    assert entry["url"] == url
    for committed in project.rglob("*"):
        if committed.is_file() and ".git" not in committed.parts:
            text = committed.read_text(encoding="utf-8")
            assert url not in text and VENV_BIN not in text, f"{committed} is not portable"


def test_the_installers_server_url_is_recorded_like_its_token(project: Path, env: dict[str, str]) -> None:
    # A user who points the CLI at their Server with POWERCONTEXT_URL expects the hook to use it too; the host
    # may start the hook without that variable (it did: the hook tried :8765 and install still said "ready").
    url, token = "http://127.0.0.1:9", "a-token"
    setting = {**env, "POWERCONTEXT_URL": url, "POWERCONTEXT_TOKEN": token}
    done = pc("hosts", "install", "claude-code", "--scope", "project:u", "--yes", cwd=project, env=setting)
    assert done.returncode == 0, done.stdout + done.stderr
    entry = machine_settings(Path(env["HOME"]))["projects"][str(project)]  # type: ignore[index]
    assert (entry["url"], entry["token"]) == (url, token)


def test_doctor_reports_the_last_hook_run_only_for_its_own_scope(tmp_path: Path, env: dict[str, str]) -> None:
    projects = {}
    for scope in ("project:a", "project:b"):
        root = tmp_path / scope.replace(":", "-")
        (root / ".git").mkdir(parents=True)
        assert pc("hosts", "install", "claude-code", "--scope", scope, "--yes", cwd=root, env=env).returncode == 0
        projects[scope] = root
    down = {**env, "POWERCONTEXT_URL": "http://127.0.0.1:9"}  # nothing listens: the hook fails open, recorded
    payload = {"hook_event_name": "UserPromptSubmit", "cwd": str(projects["project:b"]), "prompt": "how do we deploy?"}
    hook = forked.run(
        [*forked.POWERCONTEXT, "hook", "claude-code"], input=json.dumps(payload), cwd=projects["project:b"], env=down,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert hook.returncode == 0, hook.stderr

    def last_run(scope: str) -> str:
        doctor = pc("hosts", "doctor", "--json", cwd=projects[scope], env=down)
        (check,) = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "last-hook-run"]
        return str(check["detail"])

    assert "server_unavailable" in last_run("project:b")
    assert "none recorded for project:a" in last_run("project:a")


@pytest.mark.parametrize("host", HOSTS)
def test_doctor_for_one_host_runs_only_that_hosts_checks(host: str, project: Path, env: dict[str, str]) -> None:
    other = "opencode" if host == "claude-code" else "claude-code"
    for name in (other, host):
        assert pc("hosts", "install", name, "--yes", cwd=project, env=env).returncode == 0
    doctor = pc("hosts", "doctor", "--host", host, "--url", "http://127.0.0.1:9", "--json", cwd=project, env=env)
    names = [c["name"] for c in json.loads(doctor.stdout)["checks"]]
    assert [n for n in names if n.startswith(f"{host}-")], doctor.stdout
    assert not [n for n in names if n.startswith(f"{other}-")], doctor.stdout


@pytest.mark.parametrize(
    "command", [["install", "nosuchhost"], ["uninstall", "nosuchhost"], ["doctor", "--host", "nosuchhost"]]
)
def test_an_unknown_host_is_refused_with_every_host_named(
    command: list[str], project: Path, env: dict[str, str]
) -> None:
    done = pc("hosts", *command, cwd=project, env=env)
    assert done.returncode == 2
    assert "unknown host 'nosuchhost'" in done.stderr
    for host in HOSTS:
        assert host in done.stderr, done.stderr


PLANTED = {
    "claude-code": ".claude/settings.json.powercontext-tmp",
    "opencode": ".powercontext/opencode.js.powercontext-tmp",
    "pi": ".pi/extensions/powercontext.ts.powercontext-tmp",
}


@pytest.mark.parametrize("host", sorted(PLANTED))
def test_a_planted_temp_file_link_is_never_written_through(
    host: str, tmp_path: Path, project: Path, env: dict[str, str]
) -> None:
    victim = tmp_path / "victim.json"
    victim.write_text('{"permissions": "mine"}\n')
    for planted in (PLANTED[host], ".powercontext.toml.powercontext-tmp"):
        (project / planted).parent.mkdir(parents=True, exist_ok=True)
        (project / planted).symlink_to(victim)
    done = pc("hosts", "install", host, "--scope", "project:x", "--yes", cwd=project, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert victim.read_text() == '{"permissions": "mine"}\n', "install wrote through a planted link"
    assert (project / ".powercontext.toml").read_text() == 'scope_id = "project:x"\n'


def test_a_linked_claude_directory_is_refused(tmp_path: Path, project: Path, env: dict[str, str]) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / ".claude").symlink_to(outside, target_is_directory=True)
    for extra in (["--dry-run"], ["--yes"]):
        done = pc("hosts", "install", "claude-code", *extra, cwd=project, env=env)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "symbolic link" in done.stderr and str(project / ".claude") in done.stderr
    assert list(outside.iterdir()) == [], "nothing is written outside the project"


@pytest.mark.parametrize(
    ("host", "planted", "secret_file"),
    [("claude-code", ".mcp.json", ".claude.json"), ("codex", ".codex/hooks.json", ".codex/auth.json")],
)
def test_a_project_file_linked_to_a_secrets_file_is_never_read_merged_or_printed(
    host: str, planted: str, secret_file: str, project: Path, env: dict[str, str]
) -> None:
    home = Path(env["HOME"])
    secrets = home / secret_file
    secrets.parent.mkdir(parents=True, exist_ok=True)
    original = json.dumps({"primaryApiKey": SECRET, "OPENAI_API_KEY": SECRET}) + "\n"
    secrets.write_text(original)
    (project / planted).parent.mkdir(parents=True, exist_ok=True)
    (project / planted).symlink_to(secrets)
    for extra in (["--dry-run"], ["--dry-run", "--json"], ["--yes"]):
        done = pc("hosts", "install", host, *extra, cwd=project, env=env)
        assert done.returncode == 2, done.stdout + done.stderr
        assert SECRET not in done.stdout + done.stderr
        assert "symbolic link" in done.stdout + done.stderr
    assert secrets.read_text() == original
    leaked = [p for p in project.rglob("*") if p.is_file() and not p.is_symlink() and SECRET in p.read_text()]
    assert leaked == []


def test_the_dry_run_warns_as_the_install_does_and_every_fix_installs_this_checkout(
    project: Path, env: dict[str, str]
) -> None:
    """After the README's install `powercontext` is only in .venv/bin: both runs say so, and the fix they and
    doctor print installs this clone (`pipx install -e`), never the unrelated `powercontext` on PyPI."""
    no_path = {**env, "PATH": "/usr/bin:/bin"}
    dry = pc("hosts", "install", "claude-code", "--dry-run", cwd=project, env=no_path)
    real = pc("hosts", "install", "claude-code", "--yes", cwd=project, env=no_path)
    assert dry.returncode == 0 and real.returncode == 0, dry.stderr + real.stderr
    warning = [line for line in real.stderr.splitlines() if "not on PATH" in line or "fix:" in line]
    assert warning and all(line in dry.stderr for line in warning), (dry.stderr, real.stderr)
    doctor = pc("hosts", "doctor", "--url", "http://127.0.0.1:9", cwd=project, env=no_path)
    for output in (dry.stderr, real.stderr, doctor.stdout):
        assert "pipx install -e " in output, output
        assert "pipx install powercontext" not in output and "uv tool install powercontext" not in output
    # What is machine-specific (the interpreter that ran install) stays out of the committed files.
    for committed in (project / ".claude" / "settings.json", project / ".mcp.json"):
        assert VENV_BIN not in committed.read_text()


@pytest.mark.parametrize("host", HOSTS)
def test_every_project_path_install_writes_is_refused_when_planted_as_a_link(
    host: str, tmp_path: Path, project: Path, env: dict[str, str]
) -> None:
    """For each host, each project file or directory install would write (as its dry run lists them) is
    planted as a link to the user's own file or directory outside: install refuses, naming it, and writes
    nothing through it."""
    plan = pc("hosts", "install", host, "--scope", "project:x", "--dry-run", "--json", cwd=project, env=env)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    written = [Path(c["path"]) for c in json.loads(plan.stdout)["changes"]]
    firsts = sorted({p.relative_to(project).parts[0] for p in written if p.is_relative_to(project)})
    assert firsts, "every host writes something into the project"
    for first in firsts:
        is_dir = any(len(p.relative_to(project).parts) > 1 for p in written if p.is_relative_to(project / first))
        victim = tmp_path / f"victim-{first}"
        if is_dir:
            victim.mkdir()
        else:
            victim.write_text("the user's own\n", encoding="utf-8")
        (project / first).symlink_to(victim, target_is_directory=is_dir)
        done = pc("hosts", "install", host, "--scope", "project:x", "--yes", cwd=project, env=env)
        assert done.returncode == 2, (first, done.stdout + done.stderr)
        assert "symbolic link" in done.stderr and str(project / first) in done.stderr
        assert (list(victim.iterdir()) == []) if is_dir else victim.read_text(encoding="utf-8") == "the user's own\n"
        (project / first).unlink()


def _tree(root: Path) -> dict[str, str]:
    """Every file with its text, and every empty directory (as ``path/``), under ``root``."""
    tree: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            # A JSON file is edited as data: compared as data (key order and layout may change).
            tree[name] = json.dumps(json.loads(text), sort_keys=True) if path.suffix == ".json" else text
        elif path.is_dir() and not any(path.iterdir()):
            tree[name + "/"] = ""
    return tree


@pytest.mark.parametrize("host", HOSTS)
def test_uninstall_leaves_the_project_and_the_users_config_as_they_were(
    host: str, project: Path, env: dict[str, str]
) -> None:
    """Every host: install (with a Scope, a URL and consent) then uninstall gives back the project and the home
    directory exactly, the user's own config lines included: no file, block, entry or directory is left."""
    home = Path(env["HOME"])
    (home / ".config").mkdir()
    (home / ".hermes").mkdir()
    (home / ".hermes" / "config.yaml").write_text("model:\n  default: mine\n", encoding="utf-8")
    (home / ".dsh").mkdir()
    (home / ".dsh" / "cordis.patch.yml").write_text("- id: time-context\n  disabled: true\n", encoding="utf-8")
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('model = "mine"\n', encoding="utf-8")
    (home / ".claude.json").write_text('{"numStartups": 3}\n', encoding="utf-8")
    before = (_tree(project), _tree(home))
    done = pc(
        "hosts", "install", host, "--scope", "project:x", "--url", "http://127.0.0.1:9", "--yes", cwd=project, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (_tree(project), _tree(home)) != before
    done = pc("hosts", "uninstall", host, cwd=project, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _tree(project) == before[0]
    assert _tree(home) == before[1]
