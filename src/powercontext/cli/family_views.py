"""Human views of Topic Memory, Experience and Profile for the CLI (Rich)."""

from __future__ import annotations

from rich.table import Table

from powercontext.cli.rich_terminal import TerminalConsole
from powercontext.contract.common import ArtifactRef
from powercontext.contract.families import (
    Experience,
    ExperienceCandidate,
    ExperienceSearchResult,
    Profile,
    TopicMemory,
    TopicMemorySearchResult,
)


def _console() -> TerminalConsole:
    return TerminalConsole(highlight=False, soft_wrap=True)


def print_topic(topic: TopicMemory) -> None:
    ref = topic.artifact_address.artifact
    console = _console()
    console.print(
        f"{ref.artifact_id} revision {ref.revision} (head {topic.head_revision}, {topic.state})", markup=False
    )
    console.print(f"[bold]{_escape(topic.title)}[/bold]")
    if topic.tags:
        console.print("tags: " + ", ".join(topic.tags), markup=False)
    console.print(topic.body, markup=False)


def print_topic_hits(result: TopicMemorySearchResult) -> None:
    _print_hits(result.mode, [(hit.score, hit.artifact_address.artifact, hit.title) for hit in result.hits])


def _print_hits(mode: str, hits: list[tuple[float, ArtifactRef, str]]) -> None:
    """One line a hit: score, exact address and the line that names it (a title, a situation)."""
    console = _console()
    console.print(f"mode {mode}, {len(hits)} hit(s)", markup=False)
    for score, ref, label in hits:
        console.print(f"{score:7.3f}  {ref.artifact_id}@{ref.revision}  {label}", markup=False)


def _lesson_lines(situation: str, what_worked: str, what_to_avoid: str) -> list[str]:
    return [f"Situation: {situation}", f"What worked: {what_worked}", f"What to avoid: {what_to_avoid}"]


def print_experience(experience: Experience) -> None:
    ref = experience.artifact_address.artifact
    console = _console()
    console.print(
        f"{ref.artifact_id} revision {ref.revision} (head {experience.head_revision}, {experience.state},"
        f" from {experience.candidate_id})",
        markup=False,
    )
    for line in _lesson_lines(experience.situation, experience.what_worked, experience.what_to_avoid):
        console.print(line, markup=False)
    if experience.tags:
        console.print("tags: " + ", ".join(experience.tags), markup=False)


def print_candidate(candidate: ExperienceCandidate) -> None:
    console = _console()
    console.print(
        f"{candidate.candidate_id} candidate revision {candidate.candidate_revision} ({candidate.status})", markup=False
    )
    if candidate.target_artifact_id is not None:
        console.print(f"revises {candidate.target_artifact_id}@{candidate.expected_revision}", markup=False)
    if candidate.result_address is not None:
        ref = candidate.result_address.artifact
        console.print(f"approved as {ref.artifact_id}@{ref.revision}", markup=False)
    if candidate.reject_reason is not None:
        console.print(f"rejected: {candidate.reject_reason}", markup=False)
    for line in _lesson_lines(candidate.situation, candidate.what_worked, candidate.what_to_avoid):
        console.print(line, markup=False)


def print_experience_hits(result: ExperienceSearchResult) -> None:
    _print_hits(result.mode, [(hit.score, hit.artifact_address.artifact, hit.situation) for hit in result.hits])


def print_profile(profile: Profile) -> None:
    ref = profile.artifact_address.artifact
    table = Table(title=f"Profile revision {ref.revision} (head {profile.head_revision})")
    table.add_column("key", overflow="fold")
    table.add_column("value", overflow="fold")
    for entry in profile.entries:
        table.add_row(_escape(entry.key), _escape(entry.value))
    _console().print(table)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
