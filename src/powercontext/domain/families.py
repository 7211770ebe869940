"""Topic Memory, Experience, Profile and Prompt: identities and lifecycle rules, as pure functions."""

from __future__ import annotations

from typing import Final, Literal

from powercontext.contract.common import ArtifactFamily, LifecycleState

TOPIC_MEMORY: Final[ArtifactFamily] = "topic-memory"
EXPERIENCE: Final[ArtifactFamily] = "experience"
PROFILE: Final[ArtifactFamily] = "profile"
PROMPT: Final[ArtifactFamily] = "prompt"

TOPIC_ID_PREFIX: Final = "tm_"
EXPERIENCE_ID_PREFIX: Final = "ex_"
CANDIDATE_ID_PREFIX: Final = "exc_"
# One Profile per Scope, so its identity is fixed; the Scope qualifies it.
PROFILE_ARTIFACT_ID: Final = "profile"

TopicAction = Literal["retire", "restore"]
ExperienceAction = Literal["retire"]
PromptAction = Literal["retire"]
CandidateStatus = Literal["pending", "approved", "rejected"]

_FAMILY_NAMES: Final[dict[ArtifactFamily, str]] = {
    "topic-memory": "Topic Memory",
    "experience": "Experience",
    "profile": "Profile",
    "atomic-memory": "Atomic Memory",
    "prompt": "Prompt",
}

# Unlike Atomic Memory, a retired Topic Memory can come back: a topic is a place, not a claim.
_TRANSITIONS: Final[dict[tuple[ArtifactFamily, str], tuple[frozenset[LifecycleState], LifecycleState]]] = {
    ("topic-memory", "retire"): (frozenset({"active"}), "retired"),
    ("topic-memory", "restore"): (frozenset({"retired"}), "active"),
    ("experience", "retire"): (frozenset({"active"}), "retired"),
    # A retired Prompt resolves as the built-in; committing a new revision makes it active again.
    ("prompt", "retire"): (frozenset({"active"}), "retired"),
}


class FamilyTransitionRefused(Exception):
    """The lifecycle rule of the family forbids ``action`` from ``state``."""

    def __init__(self, family: ArtifactFamily, action: str, state: str) -> None:
        super().__init__(f"cannot {action} a {_FAMILY_NAMES[family]} that is {state}")
        self.family = family
        self.action = action
        self.state = state


def family_next_state(family: ArtifactFamily, action: str, state: LifecycleState) -> LifecycleState:
    """The state after ``action``; raises ``FamilyTransitionRefused`` when the family's rule forbids it."""
    rule = _TRANSITIONS.get((family, action))
    if rule is None or state not in rule[0]:
        raise FamilyTransitionRefused(family, action, state)
    return rule[1]


def family_name(family: ArtifactFamily) -> str:
    """The human name used in messages, e.g. ``Topic Memory``."""
    return _FAMILY_NAMES[family]
