"""Runs ``powercontext`` commands and Servers as processes forked from an interpreter that has imported them.

A fresh interpreter spends ~0.5 s of CPU importing the CLI and ~1.4 s importing and building a Server before it
does any work; the suite starts some 80 Servers and 250 commands, and on the 2-core machine those imports were
about a third of the suite's CPU. Python's fork server (``multiprocessing``, start method ``forkserver``)
imports every ``powercontext`` module once per test process; each command or Server is then a fork of it.

What a test observes is what a user observes: a separate process with its own pid, working directory,
environment, standard streams and exit status (a signal's number, negated), running ``powercontext``'s
console-script entry or ``serve``, talking HTTP on loopback. Only the imports, and the body limits every Server
works out from the same request models, are done in advance (``tests/forked_preload.py``). Tests of
start-up itself (which modules a command imports, how long ``--help`` takes, a fresh Server's first request)
start real interpreters instead, as ``subprocess`` does.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import pkgutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.context import ForkServerContext
from pathlib import Path

_CONTEXT: ForkServerContext | None = None


def _context() -> ForkServerContext:
    """The fork server imports this module, every ``powercontext`` module (none starts a thread or an engine at
    import: pylibseekdb and the local models load when first used) and ``tests.forked_preload``."""
    global _CONTEXT
    if _CONTEXT is None:
        import powercontext

        modules = [m.name for m in pkgutil.walk_packages(powercontext.__path__, "powercontext.")]
        _CONTEXT = multiprocessing.get_context("forkserver")
        # The framework adapters import their frameworks (LlamaIndex, the Agents SDK), which no Server uses.
        served = [m for m in modules if not m.endswith("__main__") and not m.startswith("powercontext.adapters.")]
        preload = [__name__, *served, "tests.forked_preload"]
        _CONTEXT.set_forkserver_preload(preload)
    return _CONTEXT


@dataclass(frozen=True)
class _Launch:
    """What the child needs: picklable, since the fork server receives it over a socket."""

    target: str  # "cli" or "serve"
    args: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    stdin: str
    stdout: str
    stderr: str
    serve: dict[str, str | int | None] = field(default_factory=dict)


def _reopen_std_streams(launch: _Launch) -> None:
    for fd, path, flags in (
        (0, launch.stdin, os.O_RDONLY),
        (1, launch.stdout, os.O_WRONLY | os.O_CREAT | os.O_APPEND),
        (2, launch.stderr, os.O_WRONLY | os.O_CREAT | os.O_APPEND),
    ):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    # New objects over the new descriptors, configured as a fresh interpreter configures them (UTF-8 locale).
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True
    )


def _child(launch: _Launch) -> None:
    os.chdir(launch.cwd)
    os.environ.clear()
    os.environ.update(launch.env)
    _reopen_std_streams(launch)
    if launch.target == "serve":
        from powercontext.server.run import serve
        from powercontext.settings import Settings

        serve(Settings.from_env(**launch.serve))  # type: ignore[arg-type]
        return
    from powercontext.cli.entry import main

    sys.argv = ["powercontext", *launch.args]
    main()


class ForkedProcess:
    """The part of ``subprocess.Popen``'s interface the tests use, over a forked ``multiprocessing.Process``."""

    def __init__(self, process: multiprocessing.process.BaseProcess, args: Sequence[str]) -> None:
        self._process = process
        self.args = list(args)

    @property
    def pid(self) -> int:
        pid = self._process.pid
        assert pid is not None
        return pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        code = self._process.exitcode
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def send_signal(self, sig: int) -> None:
        if self._process.exitcode is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """``env`` (default: this process's) with no embedding provider unless it names one: an unset
    ``POWERCONTEXT_EMBEDDINGS`` would load the local model in every command and Server (tests/conftest.py)."""
    chosen = dict(os.environ if env is None else env)
    chosen.setdefault("POWERCONTEXT_EMBEDDINGS", "none")
    return chosen


def _start(launch: _Launch) -> ForkedProcess:
    process = _context().Process(target=_child, args=(launch,), daemon=True)
    process.start()
    return ForkedProcess(process, ["powercontext", *launch.args])


def start_powercontext(
    args: Sequence[str],
    *,
    stdout: Path | str = os.devnull,
    stderr: Path | str = os.devnull,
    stdin: Path | str = os.devnull,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
) -> ForkedProcess:
    """``powercontext ARGS`` as a running process; its output streams are appended to the files named."""
    launch = _Launch(
        "cli", tuple(args), _environment(env), str(cwd or os.getcwd()), str(stdin), str(stdout), str(stderr)
    )
    return _start(launch)


def start_server(
    *, db: str, port: int, store: str | None, stderr: Path, env: Mapping[str, str], cwd: Path
) -> ForkedProcess:
    """A Server (``powercontext.server.run.serve``) on ``127.0.0.1:port``; its log goes to ``stderr``."""
    serve = {"db": db, "host": "127.0.0.1", "port": port, "store": store}
    launch = _Launch("serve", (), _environment(env), str(cwd), os.devnull, os.devnull, str(stderr), serve)
    return _start(launch)


# ``python -m powercontext``: the command prefix ``run`` and ``Popen`` accept, as the tests spell it.
POWERCONTEXT = (sys.executable, "-m", "powercontext")


def _powercontext_args(command: Sequence[str]) -> list[str]:
    if tuple(command[:3]) != POWERCONTEXT:
        raise ValueError(f"not a powercontext command: {command[:3]!r}")
    return [str(arg) for arg in command[3:]]


def run(
    command: Sequence[str],
    *,
    capture_output: bool = True,
    text: bool = True,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    input: str | None = None,
    timeout: float | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(command, capture_output=True, text=True, ...)`` for ``python -m powercontext ARGS``."""
    if not (capture_output and text):
        raise ValueError("forked.run captures text output only")
    with tempfile.TemporaryDirectory(prefix="pc-run-") as scratch:
        folder = Path(scratch)
        stdin = folder / "stdin"
        stdin.write_text(input or "", encoding="utf-8")
        out, err = folder / "stdout", folder / "stderr"
        args = _powercontext_args(command)
        process = start_powercontext(args, stdout=out, stderr=err, stdin=stdin, env=env, cwd=cwd)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        done = subprocess.CompletedProcess(list(command), code, _read(out), _read(err))
    if check:
        done.check_returncode()
    return done


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""
