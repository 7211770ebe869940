"""The hooks' HTTP: the bounded POST of ``powercontext.http_post``, which lives outside this package so the CLI's
short route (``cli.quick``) can send with it without importing the host integrations."""

from __future__ import annotations

from powercontext.http_post import MAX_HEADER_BYTES, MAX_RESPONSE_BYTES, HttpAnswer, TransportFailure, post_json

__all__ = ["MAX_HEADER_BYTES", "MAX_RESPONSE_BYTES", "HttpAnswer", "TransportFailure", "post_json"]
