"""Client methods for Scope-owned Prompts (mixed into ``PowerContextClient``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from powercontext.client.checks import checked_input
from powercontext.client.families import _artifact_path, _path, _wire

if TYPE_CHECKING:
    from powercontext.contract.prompts import (
        PromptArtifact,
        PromptDemonstration,
        PromptKeyStatus,
        ResolvedPromptView,
    )


M = TypeVar("M", bound=BaseModel)


class PromptClientMixin:
    """Show, set, return to auto and retire a Scope's Prompts; read their exact revisions."""

    if TYPE_CHECKING:

        async def _call(self, method: str, path: str, model: type[M], json: Any = None) -> M: ...

    async def list_prompts(self, scope_id: str) -> list[PromptKeyStatus]:
        """Every registered key as the Scope resolves it (identity and digest)."""
        from powercontext.contract.prompts import PromptKeyList
        return (await self._call("GET", _path(scope_id, "prompts"), PromptKeyList)).items

    async def get_prompt(self, scope_id: str, key: str) -> ResolvedPromptView:
        """The Prompt the Scope resolves for ``key`` now; ``compiled_text`` is set only with write access."""
        from powercontext.contract.prompts import ResolvedPromptView
        return await self._call("GET", _path(scope_id, "prompts", key), ResolvedPromptView)

    async def set_prompt(
        self,
        scope_id: str,
        key: str,
        instructions: str,
        demonstrations: Sequence[PromptDemonstration] = (),
        expected_revision: int = 0,
    ) -> ResolvedPromptView:
        """Write a custom revision; ``expected_revision`` is the current head (0 when the Scope has none)."""
        from powercontext.contract.prompts import PromptWrite, ResolvedPromptView
        with checked_input():
            body = PromptWrite(
                expected_revision=expected_revision,
                mode="custom",
                instructions=instructions,
                demonstrations=list(demonstrations),
            )
        # Not ``_wire``: a demonstration's JSON may hold nulls, which must reach the Server as sent.
        wire = body.model_dump(mode="json")
        return await self._call("PUT", _path(scope_id, "prompts", key), ResolvedPromptView, wire)

    async def set_prompt_auto(self, scope_id: str, key: str, expected_revision: int) -> ResolvedPromptView:
        """Write an auto revision: the Scope uses the built-in Prompt again."""
        from powercontext.contract.prompts import PromptWrite, ResolvedPromptView
        with checked_input():
            body = PromptWrite(expected_revision=expected_revision, mode="auto")
        return await self._call("PUT", _path(scope_id, "prompts", key), ResolvedPromptView, _wire(body))

    async def retire_prompt(self, scope_id: str, key: str, expected_revision: int | None = None) -> ResolvedPromptView:
        """Retire the Scope's custom Prompt for ``key``: the built-in one applies again."""
        from powercontext.contract.prompts import PromptLifecycle, ResolvedPromptView
        with checked_input():
            body = PromptLifecycle(action="retire", expected_revision=expected_revision)
        path = _path(scope_id, "prompts", key, "lifecycle")
        return await self._call("POST", path, ResolvedPromptView, _wire(body))

    async def get_prompt_artifact(self, scope_id: str, key: str, revision: int | None = None) -> PromptArtifact:
        """The prompt Artifact's head, or with ``revision`` that exact revision (needs write access)."""
        from powercontext.contract.prompts import PromptArtifact
        return await self._call("GET", _artifact_path(scope_id, "prompt", key, revision), PromptArtifact)
