"""``GET /``: where a person who opened the Server's address in a browser goes next.

Not part of the API (left out of the OpenAPI document); it holds no data, so it needs no token.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

router = APIRouter()


@router.get("/", include_in_schema=False)
async def root(request: Request) -> dict[str, str]:
    """Links to the Context Inspector (when it is on), the API documentation and the API's prefix."""
    links = {"name": "PowerContext Server", "docs": "/docs", "openapi": "/openapi.json", "api": "/v1"}
    if request.app.state.inspector_on:
        links["inspector"] = "/inspector"
    return links
