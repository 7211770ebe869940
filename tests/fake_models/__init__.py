"""Fake model servers on loopback for driving real agent-host CLIs (Claude Code, Codex, OpenCode, Pi).

Each server runs in a thread of the test process, logs every request it receives (path and parsed JSON body)
and answers every model call with one fixed text. A test asserts on what the model *received*:
``server.saw(marker)`` is true once any logged request body contains ``marker``.

    with serve_anthropic(answer="ok") as model:      # Anthropic Messages (SSE when "stream": true)
        run(["claude", "-p", ...], env={"ANTHROPIC_BASE_URL": model.base_url, ...})
        assert model.saw(marker)
"""

from tests.fake_models.anthropic import serve_anthropic
from tests.fake_models.base import FakeModelServer, ModelRequest
from tests.fake_models.openai_responses import serve_openai_responses

__all__ = ["FakeModelServer", "ModelRequest", "serve_anthropic", "serve_openai_responses"]
