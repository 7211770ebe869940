"""EmbeddingConfig parsing and validation, building providers from it, and the none provider."""

from __future__ import annotations

import subprocess
import sys

import pytest

from powercontext.inference import (
    EmbeddingConfig,
    EmbeddingConfigError,
    InferenceError,
    InferenceUnavailable,
    NoEmbeddings,
    OpenAICompatibleEmbeddings,
    build_embedding_provider,
)
from powercontext.inference.local import LocalMiniLM

OPENAI_ENV = {
    "POWERCONTEXT_EMBEDDINGS": "openai-compatible",
    "POWERCONTEXT_EMBEDDINGS_BASE_URL": "http://127.0.0.1:9000/v1",
    "POWERCONTEXT_EMBEDDINGS_MODEL": "nomic-embed-text",
    "POWERCONTEXT_EMBEDDINGS_DIMENSION": "768",
}


def test_empty_environment_means_the_local_model_when_it_is_installed() -> None:
    config = EmbeddingConfig.from_env({})  # the test environment has the embeddings extra
    assert config == EmbeddingConfig(provider="local")
    assert (config.timeout_s, config.batch_size) == (2.0, 64)


def test_empty_environment_means_no_embeddings_without_the_extra() -> None:
    """A fresh interpreter in which ``tokenizers`` cannot be imported, as without ``pip install '.[embeddings]'``."""
    code = (
        "import sys; sys.modules['tokenizers'] = None\n"  # how Python marks a module as not importable
        "from powercontext.inference.config import EmbeddingConfig\n"
        "print(EmbeddingConfig.from_env({}).provider,"
        " EmbeddingConfig.from_env({'POWERCONTEXT_EMBEDDINGS': 'local'}).provider)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split() == ["none", "local"]  # asking for it explicitly still names it


def test_unrelated_and_blank_variables_are_ignored() -> None:
    env = {"POWERCONTEXT_DB": "x.db", "POWERCONTEXT_EMBEDDINGS": "  ", "POWERCONTEXT_EMBEDDINGS_TIMEOUT": ""}
    assert EmbeddingConfig.from_env(env) == EmbeddingConfig.from_env({})
    assert EmbeddingConfig.from_env({"POWERCONTEXT_EMBEDDINGS": "none"}) == EmbeddingConfig()


def test_openai_compatible_from_env() -> None:
    env = {
        **OPENAI_ENV,
        "POWERCONTEXT_EMBEDDINGS_API_KEY": "sk-test-123",
        "POWERCONTEXT_EMBEDDINGS_TIMEOUT": "0.75",
        "POWERCONTEXT_EMBEDDINGS_BATCH_SIZE": "2048",
    }
    config = EmbeddingConfig.from_env(env)
    assert config == EmbeddingConfig(
        provider="openai-compatible",
        base_url="http://127.0.0.1:9000/v1",
        model="nomic-embed-text",
        dimension=768,
        api_key="sk-test-123",
        timeout_s=0.75,
        batch_size=2048,
    )


def test_provider_name_is_case_insensitive() -> None:
    assert EmbeddingConfig.from_env({"POWERCONTEXT_EMBEDDINGS": "Local"}).provider == "local"


def test_api_key_is_not_in_repr() -> None:
    config = EmbeddingConfig.from_env({**OPENAI_ENV, "POWERCONTEXT_EMBEDDINGS_API_KEY": "sk-very-secret"})
    assert "sk-very-secret" not in repr(config)
    assert "sk-very-secret" not in str(config)


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("POWERCONTEXT_EMBEDDINGS", "openai", "must be one of none, openai-compatible, local"),
        ("POWERCONTEXT_EMBEDDINGS_TIMEOUT", "soon", "a number of seconds greater than 0"),
        ("POWERCONTEXT_EMBEDDINGS_TIMEOUT", "0", "a number of seconds greater than 0"),
        ("POWERCONTEXT_EMBEDDINGS_TIMEOUT", "-1", "a number of seconds greater than 0"),
        ("POWERCONTEXT_EMBEDDINGS_TIMEOUT", "nan", "a number of seconds greater than 0"),
        ("POWERCONTEXT_EMBEDDINGS_TIMEOUT", "inf", "a number of seconds greater than 0"),
        ("POWERCONTEXT_EMBEDDINGS_BATCH_SIZE", "0", "a whole number from 1 to 2048"),
        ("POWERCONTEXT_EMBEDDINGS_BATCH_SIZE", "2049", "a whole number from 1 to 2048"),
        ("POWERCONTEXT_EMBEDDINGS_BATCH_SIZE", "1.5", "a whole number from 1 to 2048"),
        ("POWERCONTEXT_EMBEDDINGS_DIMENSION", "zero", "a whole number of at least 1"),
        ("POWERCONTEXT_EMBEDDINGS_DIMENSION", "0", "a whole number of at least 1"),
        ("POWERCONTEXT_EMBEDDINGS_BASE_URL", "127.0.0.1:9000/v1", "an http:// or https:// URL"),
        ("POWERCONTEXT_EMBEDDINGS_THREADS", "0", "a whole number from 1 to 256"),
        ("POWERCONTEXT_EMBEDDINGS_THREADS", "two", "a whole number from 1 to 256"),
        ("POWERCONTEXT_EMBEDDINGS_BACKEND", "gpu", "must be one of auto, openvino, onnx, numpy"),
    ],
)
def test_bad_values_name_the_variable_and_what_it_expects(variable: str, value: str, expected: str) -> None:
    with pytest.raises(EmbeddingConfigError) as caught:
        EmbeddingConfig.from_env({**OPENAI_ENV, variable: value})
    message = str(caught.value)
    assert message.startswith(variable)
    assert expected in message
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("missing", ["BASE_URL", "MODEL", "DIMENSION"])
def test_openai_compatible_names_each_missing_variable(missing: str) -> None:
    env = {k: v for k, v in OPENAI_ENV.items() if k != f"POWERCONTEXT_EMBEDDINGS_{missing}"}
    with pytest.raises(EmbeddingConfigError, match=f"needs POWERCONTEXT_EMBEDDINGS_{missing} "):
        EmbeddingConfig.from_env(env)


def test_openai_compatible_lists_all_missing_variables() -> None:
    with pytest.raises(EmbeddingConfigError) as caught:
        EmbeddingConfig.from_env({"POWERCONTEXT_EMBEDDINGS": "openai-compatible"})
    for name in ("BASE_URL", "MODEL", "DIMENSION"):
        assert f"POWERCONTEXT_EMBEDDINGS_{name}" in str(caught.value)


def test_errors_never_echo_the_api_key_or_the_url() -> None:
    secret_url = "ftp://user:hunter2@example.invalid/v1"
    env = {**OPENAI_ENV, "POWERCONTEXT_EMBEDDINGS_API_KEY": "sk-leak", "POWERCONTEXT_EMBEDDINGS_BASE_URL": secret_url}
    with pytest.raises(EmbeddingConfigError) as caught:
        EmbeddingConfig.from_env(env)
    assert "hunter2" not in str(caught.value)
    assert "sk-leak" not in str(caught.value)


def test_local_accepts_only_its_own_dimension_and_model() -> None:
    assert EmbeddingConfig.from_env({"POWERCONTEXT_EMBEDDINGS": "local"}).provider == "local"
    ok = {"POWERCONTEXT_EMBEDDINGS": "local", "POWERCONTEXT_EMBEDDINGS_DIMENSION": "384"}
    assert EmbeddingConfig.from_env({**ok, "POWERCONTEXT_EMBEDDINGS_MODEL": "all-MiniLM-L6-v2"}).dimension == 384
    with pytest.raises(EmbeddingConfigError, match="POWERCONTEXT_EMBEDDINGS_DIMENSION must be 384"):
        EmbeddingConfig.from_env({**ok, "POWERCONTEXT_EMBEDDINGS_DIMENSION": "768"})
    with pytest.raises(EmbeddingConfigError, match="POWERCONTEXT_EMBEDDINGS_MODEL must be all-MiniLM-L6-v2"):
        EmbeddingConfig.from_env({**ok, "POWERCONTEXT_EMBEDDINGS_MODEL": "bge-small"})


def test_direct_construction_is_validated_with_field_names() -> None:
    with pytest.raises(EmbeddingConfigError, match=r"^batch_size must be"):
        EmbeddingConfig(batch_size=0)
    with pytest.raises(EmbeddingConfigError, match=r"^timeout_s must be"):
        EmbeddingConfig(timeout_s=0.0)
    with pytest.raises(EmbeddingConfigError, match="needs base_url, model, dimension"):
        EmbeddingConfig(provider="openai-compatible")


# -- building providers --------------------------------------------------------------------------------------------


def test_build_none() -> None:
    provider = build_embedding_provider(EmbeddingConfig())
    assert isinstance(provider, NoEmbeddings)
    assert (provider.name, provider.model_id, provider.dimension, provider.configured) == ("none", "", 0, False)


def test_build_openai_compatible() -> None:
    provider = build_embedding_provider(EmbeddingConfig.from_env(OPENAI_ENV))
    try:
        assert isinstance(provider, OpenAICompatibleEmbeddings)
        assert provider.name == "openai-compatible"
        assert provider.model_id == "openai-compatible:nomic-embed-text:768"
        assert (provider.dimension, provider.configured) == (768, True)
    finally:
        provider.close()


def test_build_local_is_lazy() -> None:
    provider = build_embedding_provider(EmbeddingConfig(provider="local", batch_size=8))
    assert isinstance(provider, LocalMiniLM)
    assert provider.model_id == "local:all-MiniLM-L6-v2:int8-v1"
    assert (provider.name, provider.dimension, provider.configured, provider.batch_size) == ("local", 384, True, 8)
    provider.close()


def test_local_threads_and_backend_from_env() -> None:
    env = {"POWERCONTEXT_EMBEDDINGS": "local", "POWERCONTEXT_EMBEDDINGS_THREADS": "3",
           "POWERCONTEXT_EMBEDDINGS_BACKEND": "NumPy"}
    provider = build_embedding_provider(EmbeddingConfig.from_env(env))
    assert isinstance(provider, LocalMiniLM)
    assert (provider.threads, provider.requested_backend) == (3, "numpy")
    provider.load()
    assert provider.backend == "numpy"
    provider.close()
    default = build_embedding_provider(EmbeddingConfig.from_env({"POWERCONTEXT_EMBEDDINGS": "local"}))
    assert isinstance(default, LocalMiniLM)
    assert default.requested_backend == "auto" and default.threads >= 1


# -- the none provider ---------------------------------------------------------------------------------------------


def test_none_provider_always_refuses() -> None:
    provider = NoEmbeddings()
    for texts in (["anything"], []):
        with pytest.raises(InferenceUnavailable, match="no embedding provider is configured") as caught:
            provider.embed(texts)
        assert caught.value.reason == "inference_unavailable"
        assert isinstance(caught.value, InferenceError)
    provider.close()
