"""Prepared context for the OpenAI Agents SDK (``pip install 'powercontext[openai-agents]'``).

``PowerContextInputFilter(scope_id=...)`` is a ``call_model_input_filter``, the SDK's documented hook that runs
right before every model call of a run: it prepares context for the latest user message and appends the prepared
context (preamble, markers and items, exactly as the Server wrote them) to the agent's instructions for that call::

    result = await Runner.run(agent, "when does the batch run?",
                              run_config=RunConfig(call_model_input_filter=PowerContextInputFilter("team:atlas")))

The conversation itself is not changed, so nothing prepared is stored in a session's history.
"""

from __future__ import annotations

import logging
from typing import Any

from agents.run import CallModelData, ModelInputData

from powercontext.adapters.prepared_items import ContextCall

__all__ = ["PowerContextInputFilter"]

logger = logging.getLogger("powercontext.adapters.openai_agents")


class PowerContextInputFilter:
    """A ``RunConfig.call_model_input_filter`` that adds prepared context to the instructions of each call."""

    def __init__(
        self,
        scope_id: str,
        *,
        base_url: str | None = None,
        token: str | None = None,
        max_bytes: int = 8000,
        include_code: bool = False,
        timeout: float = 10.0,
        required: bool = False,
    ) -> None:
        """``scope_id``: the Scope to prepare from; ``base_url``/``token`` default to ``POWERCONTEXT_URL`` /
        ``POWERCONTEXT_TOKEN``. With ``required`` a failed prepare fails the run; without it (the default) the
        model is called without context and a warning is logged (no query or content in it)."""
        self.call = ContextCall(scope_id, base_url, token, max_bytes, include_code, timeout)
        self.required = required
        # A run calls the model again after each tool call for the same user message: prepare once per message.
        self._last: tuple[str, str | None] | None = None

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The model input with the prepared context appended to the instructions (unchanged when nothing is
        prepared or there is no user message)."""
        model_data = data.model_data
        query = latest_user_text(model_data.input)
        if not query:
            return model_data
        content = await self._content(query)
        if content is None:
            return model_data
        instructions = f"{model_data.instructions}\n\n{content}" if model_data.instructions else content
        return ModelInputData(input=model_data.input, instructions=instructions)

    async def _content(self, query: str) -> str | None:
        if self._last is not None and self._last[0] == query:
            return self._last[1]
        from powercontext.client.errors import PowerContextError

        try:
            content = (await self.call.aprepare(query)).content
        except PowerContextError as exc:
            if self.required:
                raise
            logger.warning("no prepared context for this model call: %s", exc.code)
            return None
        self._last = (query, content)
        return content


def latest_user_text(items: list[Any]) -> str:
    """The text of the last user message among the model input items ('' when there is none)."""
    for item in reversed(items):
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            parts = [part.get("text", "") for part in content if isinstance(part, dict) and "text" in part]
            return "\n".join(p for p in parts if isinstance(p, str))
    return ""
