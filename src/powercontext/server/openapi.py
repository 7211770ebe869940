"""Writes the served OpenAPI document as YAML: ``python -m powercontext.server.openapi > openapi/powercontext.yaml``."""

from __future__ import annotations

import sys
from typing import Any

from powercontext.server.app import create_app


def openapi_document() -> dict[str, Any]:
    return create_app(None).openapi()


def main() -> None:
    import yaml

    yaml.safe_dump(openapi_document(), sys.stdout, sort_keys=False, allow_unicode=True, width=120)


if __name__ == "__main__":
    main()
