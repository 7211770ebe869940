"""The one error envelope every 4xx/5xx body uses."""

from __future__ import annotations

from pydantic import Field

from powercontext.contract.common import StrictModel


class ErrorDetail(StrictModel):
    code: str = Field(description="Stable kebab-case code naming the problem.")
    message: str = Field(description="What went wrong and what to do about it. Never echoes content.")
    request_id: str


class ErrorBody(StrictModel):
    error: ErrorDetail
