"""``PrepareBudget``: what one prepare may still spend on model providers, in time and in model calls.

A prepare calls up to three providers (the query embedding, the expansion model, the rerank model), each with a
deadline of its own. Run back to back, those deadlines add up; the budget bounds their sum. While the prepare
runs its deadline is the active ``Deadline`` (``inference/deadline.py``), so every provider call ends by the
earlier of its own timeout and the prepare's; a call that could not start in time is not made at all. The
model-call counter is shared by expansion and rerank, so ``POWERCONTEXT_GENERATION_MAX_REQUESTS`` bounds what
they make together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from powercontext.inference.deadline import MIN_CALL_S, Deadline

DEFAULT_PREPARE_DEADLINE_MS = 5000


@dataclass
class PrepareBudget:
    deadline: Deadline
    model_calls_left: int

    @classmethod
    def start(cls, deadline_s: float, model_calls: int) -> PrepareBudget:
        """A budget whose deadline runs from now."""
        return cls(Deadline.after(deadline_s), model_calls)

    @classmethod
    def unbounded(cls) -> PrepareBudget:
        """No deadline and no call limit (a trace built outside a prepare, e.g. by a benchmark)."""
        return cls(Deadline(math.inf), 1 << 30)

    def can_start(self) -> bool:
        """Whether a provider call started now would have time to answer."""
        return self.deadline.remaining() >= MIN_CALL_S

    def take_model_call(self) -> bool:
        """Count one generation-model call; False (and nothing counted) once the limit is reached."""
        if self.model_calls_left <= 0:
            return False
        self.model_calls_left -= 1
        return True
