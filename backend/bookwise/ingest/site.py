"""What Bookwise needs from a Docusaurus site: URL settings, docs folders, versions and locales.

``docusaurus.config.{js,ts,mjs}`` is read statically (string/boolean literals only): a config that
computes its values still ingests, with the missing values given as flags.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from bookwise.errors import ConfigError, OutsideSiteError
from bookwise.ingest.routing import TrailingSlash, normalize_url

CONFIG_NAMES = (
    "docusaurus.config.js",
    "docusaurus.config.ts",
    "docusaurus.config.mjs",
    "docusaurus.config.cjs",
)


@dataclass(frozen=True)
class DocsSource:
    """One folder of docs served under one version and locale."""

    directory: Path
    version: str
    locale: str
    version_path: str  # URL prefix of every permalink in this folder, e.g. "/mysite/docs/next"


@dataclass(frozen=True)
class SiteConfig:
    site_dir: Path
    url: str = ""
    base_url: str = "/"
    docs_path: str = "docs"
    route_base_path: str = "docs"
    trailing_slash: TrailingSlash = None
    default_locale: str = "en"
    locales: tuple[str, ...] = ("en",)
    versions: tuple[str, ...] = ()  # from versions.json, newest first
    last_version: str | None = None
    read_from: str | None = None  # the config file values came from, if any
    overrides: dict[str, Any] = field(default_factory=dict)
    extra_roots: tuple[Path, ...] = ()  # folders outside site_dir that docs may resolve into

    @cached_property
    def roots(self) -> tuple[Path, ...]:
        return tuple(p.resolve() for p in (self.site_dir, *self.extra_roots))

    def inside(self, path: Path) -> bool:
        """Whether ``path``, symlinks resolved, is in the site directory or an extra root."""
        resolved = path.resolve()
        return any(resolved.is_relative_to(root) for root in self.roots)

    def with_overrides(self, **values: Any) -> SiteConfig:
        given = {k: v for k, v in values.items() if v is not None}
        return replace(self, overrides={**self.overrides, **given}, **given)

    @property
    def effective_last_version(self) -> str:
        return self.last_version or (self.versions[0] if self.versions else "current")

    def version_path_part(self, version: str) -> str:
        if version == self.effective_last_version:
            return ""
        return "next" if version == "current" else version

    def locale_base_url(self, locale: str) -> str:
        if locale == self.default_locale:
            return normalize_url("/", self.base_url, "/")
        return normalize_url("/", self.base_url, locale, "/")

    def docs_sources(self) -> list[DocsSource]:
        """Every docs folder that exists: current + versioned, default locale + translations."""
        return self.docs_folders()[0]

    def docs_folders(self) -> tuple[list[DocsSource], list[OutsideSiteError]]:
        """The docs folders to read, and those refused because they resolve outside the site."""
        sources: list[DocsSource] = []
        refused: list[OutsideSiteError] = []
        for locale in self.locales:
            for version in ("current", *self.versions):
                directory = self._docs_dir(version, locale)
                if not directory.is_dir():
                    continue
                if not self.inside(directory):
                    refused.append(
                        OutsideSiteError(
                            f"docs folder resolves to {directory.resolve()}, outside the site directory "
                            "(allow it with BOOKWISE_INGEST_EXTRA_ROOTS)",
                            path=directory.relative_to(self.site_dir).as_posix(),
                        )
                    )
                    continue
                version_path = normalize_url(
                    self.locale_base_url(locale), self.route_base_path, self.version_path_part(version)
                )
                sources.append(DocsSource(directory, version, locale, version_path))
        if not sources:
            because = f": {refused[0].message}" if refused else ""
            raise ConfigError(f"no docs folder found at {self.site_dir / self.docs_path}{because}")
        return sources, refused

    def _docs_dir(self, version: str, locale: str) -> Path:
        if locale == self.default_locale:
            if version == "current":
                return self.site_dir / self.docs_path
            return self.site_dir / "versioned_docs" / f"version-{version}"
        sub = "current" if version == "current" else f"version-{version}"
        return self.site_dir / "i18n" / locale / "docusaurus-plugin-content-docs" / sub


_STRING = r"""['"`]([^'"`]*)['"`]"""


def _literal(text: str, key: str) -> str | None:
    match = re.search(rf"\b{key}\s*:\s*{_STRING}", text)
    return match.group(1) if match else None


def _block(text: str, key: str) -> str | None:
    """The ``{...}`` object literal following ``key:``, braces balanced."""
    match = re.search(rf"\b{key}\s*:\s*\{{", text)
    if match is None:
        return None
    depth, start = 0, match.end() - 1
    for pos in range(start, len(text)):
        if text[pos] == "{":
            depth += 1
        elif text[pos] == "}":
            depth -= 1
            if depth == 0:
                return text[start : pos + 1]
    return None


def _versions(data: Any, source: Path) -> tuple[str, ...]:
    """versions.json is a list of version names, newest first (``["2.0", "1.1"]``)."""
    if not isinstance(data, list) or not all(
        isinstance(v, str | int) and not isinstance(v, bool) for v in data
    ):
        raise ConfigError(
            f'{source}: must be a JSON list of version names such as ["2.0", "1.0"], '
            f"not {json.dumps(data)[:80]}"
        )
    return tuple(str(v) for v in data)


def read_site_config(site_dir: Path, *, extra_roots: tuple[Path, ...] = ()) -> SiteConfig:
    """Defaults, then what the config file states literally, then versions.json."""
    config = SiteConfig(site_dir=site_dir, extra_roots=tuple(extra_roots))
    values: dict[str, Any] = {}
    for name in CONFIG_NAMES:
        path = site_dir / name
        if not path.is_file():
            continue
        text = re.sub(r"^\s*//.*$", "", path.read_text(encoding="utf-8", errors="replace"), flags=re.M)
        values["read_from"] = name
        for key, attr in (("url", "url"), ("baseUrl", "base_url")):
            if (value := _literal(text, key)) is not None:
                values[attr] = value
        if match := re.search(r"\btrailingSlash\s*:\s*(true|false)\b", text):
            values["trailing_slash"] = match.group(1) == "true"
        docs = _block(text, "docs") or ""
        if (value := _literal(docs, "routeBasePath")) is not None:
            values["route_base_path"] = value
        if (value := _literal(docs, "path")) is not None:
            values["docs_path"] = value
        if (value := _literal(docs, "lastVersion")) is not None:
            values["last_version"] = value
        i18n = _block(text, "i18n") or ""
        if (value := _literal(i18n, "defaultLocale")) is not None:
            values["default_locale"] = value
        if match := re.search(r"\blocales\s*:\s*\[([^\]]*)\]", i18n):
            values["locales"] = tuple(re.findall(_STRING, match.group(1)))
        break
    versions_file = site_dir / "versions.json"
    if versions_file.is_file():
        try:
            versions = json.loads(versions_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{versions_file}: invalid JSON ({exc})") from exc
        values["versions"] = _versions(versions, versions_file)
    config = replace(config, **values)
    if config.default_locale not in config.locales:
        config = replace(config, locales=(config.default_locale, *config.locales))
    return config
