"""Atomic Memory lifecycle transitions, as pure rules."""

from __future__ import annotations

from typing import Literal

from powercontext.contract.common import LifecycleState

LifecycleAction = Literal["forget", "retire", "restore"]

# Which states each action may start from; everything else is an ``artifact-not-active``-style conflict.
_ALLOWED: dict[LifecycleAction, tuple[frozenset[LifecycleState], LifecycleState]] = {
    "forget": (frozenset({"active"}), "forgotten"),
    "retire": (frozenset({"active", "forgotten"}), "retired"),
    "restore": (frozenset({"forgotten"}), "active"),
}


class TransitionRefused(Exception):
    def __init__(self, action: LifecycleAction, state: LifecycleState) -> None:
        super().__init__(f"cannot {action} an Atomic Memory that is {state}")
        self.action = action
        self.state = state


def next_state(action: LifecycleAction, state: LifecycleState) -> LifecycleState:
    """The state after ``action``; raises ``TransitionRefused`` when the rule forbids it."""
    allowed, target = _ALLOWED[action]
    if state not in allowed:
        raise TransitionRefused(action, state)
    return target
