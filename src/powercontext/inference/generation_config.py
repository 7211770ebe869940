"""Generation, rerank and expansion settings, read from ``POWERCONTEXT_GENERATION*``, ``POWERCONTEXT_RERANK*``
and ``POWERCONTEXT_EXPANSION`` by the composition root.

Rerank has its own model, timeout, request limit and safe settings; each one it leaves unset is inherited
from generation. Safe settings are a **versioned allowlist** of names and types: anything else (headers,
credentials, URLs, provider payloads, unknown names) is refused at start-up, so it can never reach a request
or a Receipt.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal, TypeVar

from powercontext.inference.generation import (
    GenerationProvider,
    NoGeneration,
    OpenAICompatibleGeneration,
    SettingValue,
)

C = TypeVar("C", bound=str)
GenerationName = Literal["none", "openai-compatible"]
RerankMode = Literal["off", "listwise", "deterministic"]
ExpansionPolicy = Literal["none", "widen", "model"]
GENERATION_PROVIDERS: tuple[GenerationName, ...] = ("none", "openai-compatible")
RERANK_MODES: tuple[RerankMode, ...] = ("off", "listwise", "deterministic")
EXPANSION_POLICIES: tuple[ExpansionPolicy, ...] = ("none", "widen", "model")

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MAX_REQUESTS = 8
MAX_MAX_REQUESTS = 100
DEFAULT_CANDIDATE_LIMIT = 30

ENV_GENERATION = "POWERCONTEXT_GENERATION"
ENV_BASE_URL = "POWERCONTEXT_GENERATION_BASE_URL"
ENV_MODEL = "POWERCONTEXT_GENERATION_MODEL"
ENV_API_KEY = "POWERCONTEXT_GENERATION_API_KEY"
ENV_TIMEOUT = "POWERCONTEXT_GENERATION_TIMEOUT"
ENV_MAX_REQUESTS = "POWERCONTEXT_GENERATION_MAX_REQUESTS"
ENV_SETTINGS = "POWERCONTEXT_GENERATION_SETTINGS"
ENV_RERANK = "POWERCONTEXT_RERANK"
ENV_RERANK_MODEL = "POWERCONTEXT_RERANK_MODEL"
ENV_RERANK_TIMEOUT = "POWERCONTEXT_RERANK_TIMEOUT"
ENV_RERANK_MAX_REQUESTS = "POWERCONTEXT_RERANK_MAX_REQUESTS"
ENV_RERANK_SETTINGS = "POWERCONTEXT_RERANK_SETTINGS"
ENV_EXPANSION = "POWERCONTEXT_EXPANSION"


class GenerationConfigError(ValueError):
    """A setting a person must fix; the message names the variable (never echoes a URL or key)."""


# -- the safe-settings allowlist --------------------------------------------------------------------------------

SAFE_SETTINGS_VERSION: Final = "powercontext.inference-settings.v1"


@dataclass(frozen=True)
class SafeSetting:
    kind: type[int] | type[float]
    low: float
    high: float
    model_setting: bool  # sent to the model; otherwise it shapes our own call (candidate_limit)


SAFE_SETTINGS: Final[Mapping[str, SafeSetting]] = MappingProxyType(
    {
        "temperature": SafeSetting(float, 0.0, 2.0, True),
        "top_p": SafeSetting(float, 0.0, 1.0, True),
        "max_output_tokens": SafeSetting(int, 1, 32768, True),
        "seed": SafeSetting(int, -(2**53 - 1), 2**53 - 1, True),  # exact in every JSON reader (RFC 8785)
        "candidate_limit": SafeSetting(int, 1, 100, False),
        # The deterministic reranker's weight of lexical coverage against the coarse rank.
        "coverage_weight": SafeSetting(float, 0.0, 1.0, False),
    }
)


def validate_safe_settings(settings: Mapping[str, object], where: str) -> dict[str, SettingValue]:
    """``settings`` checked against the allowlist (names, types, ranges); numbers normalized to their type.

    Raises ``GenerationConfigError`` naming ``where`` (a variable name) and the offending setting name.
    """
    checked: dict[str, SettingValue] = {}
    for name, value in settings.items():
        spec = SAFE_SETTINGS.get(name)
        if spec is None:
            raise GenerationConfigError(
                f"{where} may only set {', '.join(SAFE_SETTINGS)}; {name!r} is not an allowed setting"
            )
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise GenerationConfigError(f"{where}: {name} must be a number")
        if spec.kind is int and (isinstance(value, float) and not value.is_integer()):
            raise GenerationConfigError(f"{where}: {name} must be a whole number")
        if not (math.isfinite(value) and spec.low <= value <= spec.high):
            raise GenerationConfigError(f"{where}: {name} must be from {spec.low:g} to {spec.high:g}")
        checked[name] = int(value) if spec.kind is int else float(value)
    return checked


# -- the configs ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GenerationConfig:
    provider: GenerationName = "none"
    base_url: str | None = None  # requests go to {base_url}/chat/completions
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_requests: int = DEFAULT_MAX_REQUESTS  # per prepare
    settings: Mapping[str, SettingValue] = field(default_factory=lambda: {"temperature": 0.0})

    @property
    def model_id(self) -> str | None:
        """The credential-free identity a Receipt names (never the URL)."""
        return None if self.model is None else f"{self.provider}:{self.model}"


@dataclass(frozen=True)
class ModelCallConfig:
    """One model-backed operation's effective settings after inheritance (what a Receipt's record names)."""

    model: str  # the wire model name
    model_id: str  # "openai-compatible:<model>"
    timeout_s: float
    max_requests: int
    settings: Mapping[str, SettingValue]


@dataclass(frozen=True)
class RerankConfig:
    mode: RerankMode = "off"
    model: str | None = None  # None: inherit
    timeout_s: float | None = None
    max_requests: int | None = None
    settings: Mapping[str, SettingValue] = field(default_factory=dict)  # overrides, merged over generation's


@dataclass(frozen=True)
class InferenceSettings:
    """Everything model-backed recall needs, validated as a whole (rerank and expansion need generation)."""

    generation: GenerationConfig = field(default_factory=GenerationConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    expansion: ExpansionPolicy = "none"

    def __post_init__(self) -> None:
        generation = self.generation
        if generation.provider == "openai-compatible" and (generation.base_url is None or generation.model is None):
            missing = [n for n, v in ((ENV_BASE_URL, generation.base_url), (ENV_MODEL, generation.model)) if not v]
            raise GenerationConfigError(f"{ENV_GENERATION}=openai-compatible needs {' and '.join(missing)}")
        if self.rerank.mode == "listwise" and generation.provider == "none":
            raise GenerationConfigError(f"{ENV_RERANK}=listwise needs {ENV_GENERATION}=openai-compatible")
        if self.expansion == "model" and generation.provider == "none":
            raise GenerationConfigError(f"{ENV_EXPANSION}=model needs {ENV_GENERATION}=openai-compatible")

    def rerank_call(self) -> ModelCallConfig:
        """The listwise rerank's effective model settings: each unset one inherited from generation."""
        g, r = self.generation, self.rerank
        model = r.model or g.model
        assert model is not None  # __post_init__: listwise needs a configured generation model
        settings = {"candidate_limit": DEFAULT_CANDIDATE_LIMIT, **g.settings, **r.settings}
        return ModelCallConfig(
            model=model,
            model_id=f"{g.provider}:{model}",
            timeout_s=g.timeout_s if r.timeout_s is None else r.timeout_s,
            max_requests=g.max_requests if r.max_requests is None else r.max_requests,
            settings=dict(sorted(settings.items())),
        )

    def expansion_call(self) -> ModelCallConfig:
        g = self.generation
        assert g.model is not None
        settings = {k: v for k, v in g.settings.items() if k != "candidate_limit"}
        return ModelCallConfig(g.model, f"{g.provider}:{g.model}", g.timeout_s, g.max_requests, settings)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> InferenceSettings:
        """Read the variables; unset or blank ones take the defaults. Raises ``GenerationConfigError``."""

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        provider = _choice(get(ENV_GENERATION) or "none", ENV_GENERATION, GENERATION_PROVIDERS)
        base_url = get(ENV_BASE_URL)
        if base_url is not None and not base_url.lower().startswith(("http://", "https://")):
            raise GenerationConfigError(f"{ENV_BASE_URL} must be an http:// or https:// URL")
        generation_settings = {"temperature": 0.0, **_settings(get(ENV_SETTINGS), ENV_SETTINGS)}
        generation = GenerationConfig(
            provider=provider,
            base_url=base_url,
            model=get(ENV_MODEL),
            api_key=get(ENV_API_KEY),
            timeout_s=_seconds(get(ENV_TIMEOUT), ENV_TIMEOUT, DEFAULT_TIMEOUT_S),
            max_requests=_requests(get(ENV_MAX_REQUESTS), ENV_MAX_REQUESTS, DEFAULT_MAX_REQUESTS),
            settings=generation_settings,
        )
        rerank_timeout, rerank_requests = get(ENV_RERANK_TIMEOUT), get(ENV_RERANK_MAX_REQUESTS)
        rerank = RerankConfig(
            mode=_choice(get(ENV_RERANK) or "off", ENV_RERANK, RERANK_MODES),
            model=get(ENV_RERANK_MODEL),
            timeout_s=None if rerank_timeout is None else _seconds(rerank_timeout, ENV_RERANK_TIMEOUT, 0.0),
            max_requests=None
            if rerank_requests is None
            else _requests(rerank_requests, ENV_RERANK_MAX_REQUESTS, DEFAULT_MAX_REQUESTS),
            settings=_settings(get(ENV_RERANK_SETTINGS), ENV_RERANK_SETTINGS),
        )
        expansion = _choice(get(ENV_EXPANSION) or "none", ENV_EXPANSION, EXPANSION_POLICIES)
        return cls(generation, rerank, expansion)


def build_generation_provider(config: GenerationConfig) -> GenerationProvider:
    if config.provider == "openai-compatible":
        assert config.base_url is not None
        return OpenAICompatibleGeneration(config.base_url, api_key=config.api_key)
    return NoGeneration()


def _choice(raw: str, name: str, choices: tuple[C, ...]) -> C:
    value = raw.lower()
    for choice in choices:
        if value == choice:
            return choice
    raise GenerationConfigError(f"{name} must be one of {', '.join(choices)}")


def _seconds(raw: str | None, name: str, default: float) -> float:
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise GenerationConfigError(f"{name} must be a number of seconds greater than 0") from None
    if not (math.isfinite(value) and value > 0):
        raise GenerationConfigError(f"{name} must be a number of seconds greater than 0")
    return value


def _requests(raw: str | None, name: str, default: int) -> int:
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise GenerationConfigError(f"{name} must be a whole number from 1 to {MAX_MAX_REQUESTS}") from None
    if not 1 <= value <= MAX_MAX_REQUESTS:
        raise GenerationConfigError(f"{name} must be a whole number from 1 to {MAX_MAX_REQUESTS}")
    return value


def _settings(raw: str | None, name: str) -> dict[str, SettingValue]:
    if raw is None:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise GenerationConfigError(f"{name} must be a JSON object of safe settings") from None
    if not isinstance(parsed, dict):
        raise GenerationConfigError(f"{name} must be a JSON object of safe settings")
    return validate_safe_settings(parsed, name)
