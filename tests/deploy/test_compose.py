"""compose.yaml and the scale profile's nginx config: every setting they name is real, every value they
set is accepted, and the load balancer's config streams an answer when run by a real nginx.

The images of Qdrant's server, PostgreSQL, Redis and nginx cannot be pulled here, so the compose file
is checked as data and its nginx config is run by Debian's nginx in front of the API on loopback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver import build_book, chat, running_api
from bookwise.settings import Settings
from conftest import SETTING_VARIABLES
from nginx import free_port, recipe, running_nginx

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose.yaml"
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
DEPLOY_FILES = [COMPOSE, NGINX_CONF, ROOT / "Dockerfile", ROOT / "docs" / "container.md"]
VARIABLE = re.compile(r"\bBOOKWISE_[A-Z0-9_]+")


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return data


def services(profile: str | None) -> set[str]:
    """The services `docker compose` starts with that profile on (None: no profile)."""
    return {
        name
        for name, service in compose()["services"].items()
        if not service.get("profiles") or profile in service["profiles"]
    }


@pytest.mark.parametrize("path", DEPLOY_FILES, ids=lambda path: path.name)
def test_every_bookwise_variable_named_is_a_setting(path: Path) -> None:
    named = set(VARIABLE.findall(path.read_text(encoding="utf-8")))
    assert named, f"{path.name} names no BOOKWISE_ variable"
    assert named - SETTING_VARIABLES == set()


def test_default_is_one_container_with_its_data_on_a_volume() -> None:
    assert services(None) == {"bookwise"}
    bookwise = compose()["services"]["bookwise"]
    assert bookwise["ports"] == ["8000:8000"]
    assert "bookwise-data:/data" in bookwise["volumes"]
    assert "bookwise-data" in compose()["volumes"]
    assert not any(name.startswith("BOOKWISE_QDRANT") for name in bookwise["environment"])


def test_scale_profile_has_qdrant_postgres_redis_replicas_and_a_load_balancer() -> None:
    assert services("scale") == {"bookwise", "qdrant", "postgres", "redis", "api", "lb"}
    scale = compose()["services"]
    assert scale["api"]["deploy"]["replicas"] >= 2
    assert "ports" not in scale["api"]  # reached only through the load balancer
    env = scale["api"]["environment"]
    assert env["BOOKWISE_QDRANT_URL"].startswith("http://qdrant:")
    assert env["BOOKWISE_INSIGHTS_DB_URL"].startswith("postgresql://")
    assert "@postgres:" in env["BOOKWISE_INSIGHTS_DB_URL"]
    assert env["BOOKWISE_REDIS_URL"].startswith("redis://redis:")
    mounted = scale["lb"]["volumes"][0].split(":")[0]
    assert (ROOT / mounted).resolve() == NGINX_CONF


@pytest.mark.parametrize("service", ["bookwise", "api"])
def test_every_value_compose_sets_is_accepted_by_settings(
    service: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Set values (compose's `${VAR:-default}` taken at its default) load as Settings; unset ones (null:
    passed through from the shell only when set there) are left out."""
    env = compose()["services"][service]["environment"]
    for name, value in env.items():
        if value is not None:
            monkeypatch.setenv(name, re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(value)))
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    if service == "api":
        assert settings.qdrant_url == "http://qdrant:6333"
        assert settings.trusted_proxies  # the replicas believe nginx's X-Forwarded-For


def test_nginx_config_keeps_the_recipes_proxy_settings() -> None:
    """The load balancer streams like the documented single-server recipe: same proxy_* and limits."""
    ours = NGINX_CONF.read_text(encoding="utf-8")
    wanted = [
        line.split("#")[0].strip()
        for line in recipe().splitlines()
        if line.strip().startswith(("proxy_", "client_", "send_timeout", "keepalive_timeout", "limit_conn"))
        and "proxy_pass" not in line
    ]
    assert len(wanted) > 10
    missing = [line for line in wanted if line not in ours]
    assert missing == []


def test_nginx_config_streams_an_answer_through_a_real_nginx(tmp_path: Path) -> None:
    """deploy/nginx.conf as written, only the replicas' address and the listen port swapped."""
    settings = build_book(tmp_path)
    with running_api(settings) as api_url:
        config = NGINX_CONF.read_text(encoding="utf-8")
        for old in ("server api:8000", "listen 80;"):
            assert old in config, f"deploy/nginx.conf no longer contains {old!r}: update this test"
        port = free_port()
        config = config.replace("server api:8000", f"server {api_url.removeprefix('http://')}")
        config = config.replace("listen 80;", f"listen 127.0.0.1:{port};")
        with running_nginx(tmp_path / "nginx", config, port) as url:
            stream = chat(url.replace("https://", "http://"), {"question": "What do quokkas eat?"})
    assert stream.status == 200
    assert stream.names()[-1] == "done"
    assert stream.first("sources")["sources"]
    assert "peppermint" in stream.answer.lower()
