"""Each route's request body limit: the size of the largest valid request to it, from its body model.

The gate looks the limit up before routing, by method and path. No limit is under ``MIN_ROUTE_BODY_BYTES``
(64 KiB): a small route's largest valid request is a few dozen bytes, and a valid body written with wider
indentation, or an invalid one with an extra field, should get its answer (200, 422), not a 413. A path no
API route serves (``/mcp``, the Inspector's files, an unknown path) gets the largest limit of all:
the MCP transport reads its own bodies, and an unknown path is answered 404 without reading one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from fastapi.routing import APIRoute

from powercontext.contract.limits import MAX_REQUEST_BODY_BYTES, largest_request_bytes

__all__ = ["MIN_ROUTE_BODY_BYTES", "BodyLimits", "RouteBodyLimit"]

MIN_ROUTE_BODY_BYTES = 64 * 1024


@dataclass(frozen=True)
class RouteBodyLimit:
    method: str
    path: str  # the route template, as the OpenAPI document names it
    pattern: re.Pattern[str]
    max_bytes: int
    takes_body: bool


class BodyLimits:
    """The body limit of every API route, looked up by method and path."""

    def __init__(self, routes: Iterable[APIRoute]) -> None:
        self.routes = sorted(
            (
                RouteBodyLimit(method, route.path, route.path_regex, *_route_limit(route))
                for route in routes
                for method in route.methods or ()
            ),
            # A literal path wins over a template that also matches it (``/batch`` over ``/{artifact_id}``).
            key=lambda limit: (limit.pattern.groups, limit.path),
        )
        self.fallback = MAX_REQUEST_BODY_BYTES

    def limit_for(self, method: str, path: str) -> int:
        """The limit of the route that will serve this request."""
        for limit in self.routes:
            if limit.method == method and limit.pattern.match(path):
                return limit.max_bytes
        return self.fallback

    def published(self) -> dict[str, int]:
        """``"METHOD /template"`` to limit, for every route that takes a body (``GET /v1/capabilities``)."""
        return {f"{limit.method} {limit.path}": limit.max_bytes for limit in self.routes if limit.takes_body}


def _route_limit(route: APIRoute) -> tuple[int, bool]:
    annotation = route.body_field.field_info.annotation if route.body_field is not None else None
    if annotation is None:
        return MIN_ROUTE_BODY_BYTES, False
    largest = largest_request_bytes(annotation)  # type: ignore[arg-type]
    return max(largest, MIN_ROUTE_BODY_BYTES), True
