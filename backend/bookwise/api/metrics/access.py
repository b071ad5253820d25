"""Who may read ``/metrics``: never the public; a bearer token, or a listener of its own."""

from __future__ import annotations

from bookwise.api.bearer import bearer_matches
from bookwise.errors import ConfigError, UnauthorizedError
from bookwise.settings import MetricsSettings

PATH = "/metrics"


def check_metrics_config(settings: MetricsSettings) -> None:
    if settings.metrics and settings.metrics_port is None and settings.metrics_token is None:
        raise ConfigError(
            "BOOKWISE_METRICS is on but /metrics would be public: set BOOKWISE_METRICS_TOKEN (scrapers "
            "send it as a bearer token) or BOOKWISE_METRICS_PORT (a separate listener)"
        )


def authorized(header: bytes | None, token: bytes | None) -> bool:
    return token is None or bearer_matches(header or b"", token)


def unauthorized() -> UnauthorizedError:
    return UnauthorizedError("/metrics needs the bearer token (Authorization: Bearer <token>)")
