"""``context prepare --include-receipt``'s human view, piped as scripts and CI logs read it."""

from __future__ import annotations

import json
import os
import uuid

from tests import forked
from tests.conftest import LiveServer
from tests.e2e.test_cli import CLI, run_cli


def test_ids_are_never_broken_across_lines_when_piped(server: LiveServer) -> None:
    url = server.base_url
    scope = f"cli-view-{uuid.uuid4().hex[:12]}:" + "long-scope-name-" * 4
    assert run_cli("scope", "create", scope, "--title", "view", url=url).returncode == 0
    ids = []
    for i in range(3):
        added = run_cli("memory", "add", f"The ledger reconciliation job {i} runs nightly.", "-s", scope, url=url)
        assert added.returncode == 0, added.stderr
        ids.append(added.stdout.split()[0])
    # A narrow COLUMNS, as an 80-column CI log or a small pane would give, and stdout a pipe.
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(POWERCONTEXT_URL=url, COLUMNS="40")
    args = ["context", "prepare", "-s", scope, "-q", "ledger reconciliation", "--include-receipt"]
    human = forked.run([*CLI, *args], capture_output=True, text=True, timeout=60, env=env, check=False)
    assert human.returncode == 0, human.stderr
    receipt_view = human.stdout.split("END_POWERCONTEXT_PREPARED_CONTEXT_V1", 1)[1]  # the ids in the content aside
    for artifact_id in ids:
        assert any(artifact_id in line and scope in line for line in receipt_view.splitlines()), receipt_view


def test_families_that_found_nothing_are_not_counted_as_omitted_items(server: LiveServer) -> None:
    url = server.base_url
    scope = f"cli-view-{uuid.uuid4().hex[:12]}"
    assert run_cli("scope", "create", scope, "--title", "view", url=url).returncode == 0
    assert run_cli("memory", "add", "The ledger job runs nightly.", "-s", scope, url=url).returncode == 0
    human = run_cli("context", "prepare", "-s", scope, "-q", "ledger job", "--include-receipt", url=url)
    assert human.returncode == 0, human.stderr
    # The Scope stores no Topic Memory or Experience: no "not_retrieved 1" row pretends one item was left out.
    assert "not_retrieved" not in human.stdout
    assert "no candidates (none stored or none matched): topic-memory, experience" in human.stdout
    raw = run_cli("context", "prepare", "-s", scope, "-q", "ledger job", "--include-receipt", "--json", url=url)
    omitted = json.loads(raw.stdout)["receipt"]["omitted"]
    assert {"family": "topic-memory", "reason": "not_retrieved", "count": 1} in omitted  # the Receipt is unchanged
