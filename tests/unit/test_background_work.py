"""``BackgroundWork``: one owner starts every job, drains them last-first within one deadline, and reports them."""

from __future__ import annotations

import threading

import pytest

from powercontext.jobs.background import BackgroundWork


class RecordingJob:
    """A job that runs a thread until stopped, and records what happened to it in a shared journal."""

    def __init__(self, name: str, journal: list[str], *, fail_start: bool = False) -> None:
        self.name, self.journal, self.fail_start = name, journal, fail_start
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self.timeouts: list[float] = []

    def start(self) -> None:
        if self.fail_start:
            raise RuntimeError("cannot start")
        self.thread = threading.Thread(target=self.stopping.wait, daemon=True)
        self.thread.start()
        self.journal.append(f"start {self.name}")

    def stop(self, timeout_s: float = 5.0) -> None:
        self.timeouts.append(timeout_s)
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(timeout_s)
        self.journal.append(f"stop {self.name}")

    def detail(self) -> dict[str, object]:
        return {"running": self.thread is not None and self.thread.is_alive()}


def test_jobs_start_in_order_and_drain_in_reverse_within_the_deadline() -> None:
    journal: list[str] = []
    work = BackgroundWork()
    first, second = RecordingJob("a", journal), RecordingJob("b", journal)
    work.register("a", first)
    work.register("b", second)
    work.start()
    work.start()  # a second start starts nothing twice
    assert journal == ["start a", "start b"]
    assert work.detail() == {"a": {"running": True}, "b": {"running": True}}
    work.drain(timeout_s=2.0)
    assert journal[2:] == ["stop b", "stop a"]
    assert work.detail() == {"a": {"running": False}, "b": {"running": False}}
    assert all(0.0 <= t <= 2.0 for t in first.timeouts + second.timeouts)


def test_a_job_that_fails_to_start_does_not_keep_the_others_from_starting() -> None:
    journal: list[str] = []
    work = BackgroundWork()
    work.register("broken", RecordingJob("broken", journal, fail_start=True))
    work.register("fine", RecordingJob("fine", journal))
    work.start()
    assert journal == ["start fine"]
    work.drain()
    assert "stop fine" in journal


def test_a_job_registered_after_start_starts_at_once_and_names_are_unique() -> None:
    journal: list[str] = []
    work = BackgroundWork()
    work.start()
    work.register("late", RecordingJob("late", journal))
    assert journal == ["start late"]
    with pytest.raises(ValueError, match="already registered"):
        work.register("late", RecordingJob("late", journal))
    work.drain()
