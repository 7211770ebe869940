"""Which embedding provider runs, read from ``POWERCONTEXT_EMBEDDINGS_*`` by the composition root."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from powercontext.inference.base import EmbeddingProvider
from powercontext.inference.errors import EmbeddingConfigError

__all__ = [
    "EmbeddingConfig",
    "EmbeddingConfigError",
    "build_embedding_provider",
    "default_provider",
    "local_model_installed",
]

ProviderName = Literal["none", "openai-compatible", "local"]
PROVIDERS: tuple[ProviderName, ...] = ("none", "openai-compatible", "local")
DEFAULT_TIMEOUT_S = 2.0
DEFAULT_BATCH_SIZE = 64
MAX_BATCH_SIZE = 2048
LOCAL_DIMENSION = 384
LOCAL_MODEL_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")

ENV_PROVIDER = "POWERCONTEXT_EMBEDDINGS"
ENV_BASE_URL = "POWERCONTEXT_EMBEDDINGS_BASE_URL"
ENV_MODEL = "POWERCONTEXT_EMBEDDINGS_MODEL"
ENV_DIMENSION = "POWERCONTEXT_EMBEDDINGS_DIMENSION"
ENV_API_KEY = "POWERCONTEXT_EMBEDDINGS_API_KEY"
ENV_TIMEOUT = "POWERCONTEXT_EMBEDDINGS_TIMEOUT"
ENV_BATCH_SIZE = "POWERCONTEXT_EMBEDDINGS_BATCH_SIZE"
ENV_THREADS = "POWERCONTEXT_EMBEDDINGS_THREADS"
ENV_BACKEND = "POWERCONTEXT_EMBEDDINGS_BACKEND"
LOCAL_BACKENDS = ("auto", "openvino", "onnx", "numpy")
MAX_THREADS = 256


@dataclass(frozen=True)
class EmbeddingConfig:
    """Validated on construction, so a config that exists can always be built into a provider.

    ``dimension`` is required for ``openai-compatible`` (vectors of another length are rejected as a bad
    payload); ``local`` is always 384-dimensional all-MiniLM-L6-v2 and ignores ``base_url``/``api_key``.
    """

    provider: ProviderName = "none"
    base_url: str | None = None  # e.g. http://127.0.0.1:9000/v1; requests go to {base_url}/embeddings
    model: str | None = None
    dimension: int | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = DEFAULT_TIMEOUT_S
    batch_size: int = DEFAULT_BATCH_SIZE
    # local only: threads one bulk call spreads its mini-batches over (None: one per CPU), and which route runs
    threads: int | None = None
    backend: Literal["auto", "openvino", "onnx", "numpy"] = "auto"

    def __post_init__(self) -> None:
        _validate(self)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> EmbeddingConfig:
        """Read the ``POWERCONTEXT_EMBEDDINGS*`` variables; unset or blank ones take the defaults.

        Raises ``EmbeddingConfigError`` naming the variable and what it expects.
        """

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        provider = (get(ENV_PROVIDER) or default_provider()).lower()
        if provider not in PROVIDERS:
            raise EmbeddingConfigError(f"{ENV_PROVIDER} must be one of {', '.join(PROVIDERS)}; got {provider!r}")
        dimension = get(ENV_DIMENSION)
        timeout = get(ENV_TIMEOUT)
        batch_size = get(ENV_BATCH_SIZE)
        threads = get(ENV_THREADS)
        backend = (get(ENV_BACKEND) or "auto").lower()
        if backend not in LOCAL_BACKENDS:
            raise EmbeddingConfigError(f"{ENV_BACKEND} must be one of {', '.join(LOCAL_BACKENDS)}; got {backend!r}")
        try:
            return cls(
                provider=provider,
                base_url=get(ENV_BASE_URL),
                model=get(ENV_MODEL),
                dimension=None if dimension is None else _parse_int(dimension, ENV_DIMENSION, "of at least 1"),
                api_key=get(ENV_API_KEY),
                timeout_s=DEFAULT_TIMEOUT_S if timeout is None else _parse_float(timeout, ENV_TIMEOUT),
                batch_size=DEFAULT_BATCH_SIZE
                if batch_size is None
                else _parse_int(batch_size, ENV_BATCH_SIZE, f"from 1 to {MAX_BATCH_SIZE}"),
                threads=None if threads is None else _parse_int(threads, ENV_THREADS, f"from 1 to {MAX_THREADS}"),
                backend=backend,  # type: ignore[arg-type]  # checked against LOCAL_BACKENDS above
            )
        except _InvalidSetting as exc:
            raise exc.renamed(_ENV_NAMES) from None


def local_model_installed() -> bool:
    """Whether the ``embeddings`` extra (numpy and tokenizers) is importable; nothing is imported to find out."""
    return all(importlib.util.find_spec(name) is not None for name in ("numpy", "tokenizers"))


def default_provider() -> ProviderName:
    """What an unset ``POWERCONTEXT_EMBEDDINGS`` means: the offline local model when it is installed (it needs
    no network and no key, so hybrid search is the default wherever it can run), else no provider."""
    return "local" if local_model_installed() else "none"


def build_embedding_provider(config: EmbeddingConfig) -> EmbeddingProvider:
    """The provider ``config`` names. ``local`` needs the ``embeddings`` extra; its model loads lazily."""
    if config.provider == "openai-compatible":
        from powercontext.inference.openai_compatible import OpenAICompatibleEmbeddings

        # __post_init__ guarantees these three are set for this provider.
        assert config.base_url is not None and config.model is not None and config.dimension is not None
        return OpenAICompatibleEmbeddings(
            config.base_url,
            config.model,
            config.dimension,
            api_key=config.api_key,
            timeout_s=config.timeout_s,
            batch_size=config.batch_size,
        )
    if config.provider == "local":
        try:
            from powercontext.inference.local import LocalMiniLM
        except ImportError:
            raise EmbeddingConfigError(
                "the local embedding model needs the 'embeddings' extra: pip install 'powercontext[embeddings]'"
            ) from None
        from powercontext.inference.local import missing_extra

        extra = missing_extra(config.backend)
        if extra is not None:
            raise EmbeddingConfigError(
                f"{ENV_BACKEND}={config.backend} needs the '{extra}' extra: pip install 'powercontext[{extra}]'"
            )
        return LocalMiniLM(batch_size=config.batch_size, threads=config.threads, backend=config.backend)
    from powercontext.inference.none import NoEmbeddings

    return NoEmbeddings()


# -- validation ---------------------------------------------------------------------------------------------------

_ENV_NAMES = {
    "provider": ENV_PROVIDER,
    "base_url": ENV_BASE_URL,
    "model": ENV_MODEL,
    "dimension": ENV_DIMENSION,
    "timeout_s": ENV_TIMEOUT,
    "batch_size": ENV_BATCH_SIZE,
    "threads": ENV_THREADS,
    "backend": ENV_BACKEND,
}


class _InvalidSetting(EmbeddingConfigError):
    """Names settings by field; ``from_env`` re-words it with the variable names the person actually wrote."""

    def __init__(self, template: str, *settings: str) -> None:
        super().__init__(template.format(*settings))
        self.template = template
        self.settings = settings

    def renamed(self, names: Mapping[str, str]) -> EmbeddingConfigError:
        return EmbeddingConfigError(self.template.format(*(names[s] for s in self.settings)))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _validate(config: EmbeddingConfig) -> None:
    if config.provider not in PROVIDERS:
        raise _InvalidSetting("{} must be one of " + ", ".join(PROVIDERS), "provider")
    timeout = config.timeout_s
    if not (_is_int(timeout) or isinstance(timeout, float)) or not (math.isfinite(timeout) and timeout > 0):
        raise _InvalidSetting("{} must be a number of seconds greater than 0", "timeout_s")
    if not _is_int(config.batch_size) or not 1 <= config.batch_size <= MAX_BATCH_SIZE:
        raise _InvalidSetting(f"{{}} must be a whole number from 1 to {MAX_BATCH_SIZE}", "batch_size")
    if config.threads is not None and (not _is_int(config.threads) or not 1 <= config.threads <= MAX_THREADS):
        raise _InvalidSetting(f"{{}} must be a whole number from 1 to {MAX_THREADS}", "threads")
    if config.backend not in LOCAL_BACKENDS:
        raise _InvalidSetting("{} must be one of " + ", ".join(LOCAL_BACKENDS), "backend")
    dimension = config.dimension
    if dimension is not None and (not _is_int(dimension) or dimension < 1):
        raise _InvalidSetting("{} must be a whole number of at least 1", "dimension")
    if config.base_url is not None and not config.base_url.lower().startswith(("http://", "https://")):
        # The value itself is not echoed: URLs may carry credentials.
        raise _InvalidSetting("{} must be an http:// or https:// URL", "base_url")
    if config.provider == "openai-compatible":
        missing = tuple(key for key in ("base_url", "model", "dimension") if getattr(config, key) is None)
        if missing:
            raise _InvalidSetting(
                "the openai-compatible embedding provider needs "
                + ", ".join("{}" for _ in missing)
                + " (the server's base URL up to but excluding /embeddings, the model name, and the vector length)",
                *missing,
            )
    elif config.provider == "local":
        if dimension is not None and dimension != LOCAL_DIMENSION:
            raise _InvalidSetting(
                f"{{}} must be {LOCAL_DIMENSION} or unset for the local all-MiniLM-L6-v2 model", "dimension"
            )
        if config.model is not None and config.model not in LOCAL_MODEL_NAMES:
            raise _InvalidSetting("{} must be all-MiniLM-L6-v2 or unset: it is the only local model", "model")


def _parse_int(raw: str, name: str, expected: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise EmbeddingConfigError(f"{name} must be a whole number {expected}; got {raw!r}") from None


def _parse_float(raw: str, name: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise EmbeddingConfigError(f"{name} must be a number of seconds greater than 0; got {raw!r}") from None
