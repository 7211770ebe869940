"""The Context Inspector: a static page the Server ships and serves, which calls the public API from the browser.

The page holds no data of its own. It asks the Server to explain one prepare (``POST /v1/context/explain``, which
includes that prepare's answer and Receipt) under the viewer's token and renders what came back; every body it shows
is fetched through the ordinary exact-read routes.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response

# Only this origin's own script and style; no inline script, no other origin, no plugins, no framing.
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'none'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
ASSETS: Final[dict[str, str]] = {
    "index.html": "text/html; charset=utf-8",
    "inspector.js": "text/javascript; charset=utf-8",
    "inspector.css": "text/css; charset=utf-8",
}
INSPECTOR_PATHS: Final = frozenset({"/inspector", *(f"/inspector/{name}" for name in ASSETS if name != "index.html")})
_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _load_assets() -> dict[str, bytes]:
    package = files(__name__)
    return {name: package.joinpath(name).read_bytes() for name in ASSETS}


def inspector_router() -> APIRouter:
    """``GET /inspector`` and its two assets, read once from package data."""
    assets = _load_assets()
    router = APIRouter(include_in_schema=False)

    def serve(name: str) -> Response:
        return Response(assets[name], media_type=ASSETS[name], headers=_HEADERS)

    @router.get("/inspector")
    def page() -> Response:
        return serve("index.html")

    @router.get("/inspector/{asset}")
    def asset(asset: str) -> Response:
        if asset not in ASSETS or asset == "index.html":
            raise HTTPException(status_code=404)
        return serve(asset)

    return router
