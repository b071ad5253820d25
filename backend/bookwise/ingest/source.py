"""Reading one source file: size limit, encoding, front matter. Errors carry path and line."""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

from bookwise.errors import EncodingError, FileTooLargeError, FrontMatterError, NotARegularFileError

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*$\r?\n?", re.S | re.M)


@dataclass(frozen=True)
class SourceFile:
    path: str  # as reported to users
    text: str  # whole file, decoded, newlines normalized to "\n"
    front_matter: dict[str, Any]
    body_offset: int  # index in ``text`` where the Markdown body starts


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _read_regular_file(path: Path, display_path: str, max_bytes: int) -> bytes:
    # O_NONBLOCK: a FIFO swapped in after discovery is refused, not waited on forever.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFileError("not a regular file (a FIFO, socket or device)", path=display_path)
        raw = file.read(max_bytes + 1)  # never more than the limit, even if the file grew meanwhile
        if max(info.st_size, len(raw)) > max_bytes:
            raise FileTooLargeError(
                f"file is {max(info.st_size, len(raw))} bytes, over the {max_bytes}-byte limit "
                "(max_file_bytes)",
                path=display_path,
            )
        return raw


def read_source(path: Path, display_path: str, max_bytes: int) -> SourceFile:
    raw = _read_regular_file(path, display_path, max_bytes)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise EncodingError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
            path=display_path,
            line=line,
        ) from exc
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        raise EncodingError(
            "contains NUL bytes: not a text file", path=display_path, line=line_of(text, text.index("\x00"))
        )
    return parse_front_matter(text, display_path)


def parse_front_matter(text: str, display_path: str) -> SourceFile:
    match = _FRONT_MATTER.match(text)
    if match is None:
        if text.startswith("---\n"):
            raise FrontMatterError("front matter is not closed by a '---' line", path=display_path, line=1)
        return SourceFile(display_path, text, {}, 0)
    try:
        # Parse exactly the text between the fences so YAML line numbers map onto the file.
        metadata = YAMLHandler().load(match.group(1))
    except yaml.YAMLError as exc:
        # The context mark is where the broken construct starts (e.g. an unclosed "["): more useful.
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1  # +1 for 1-based, +1 for the opening '---'
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FrontMatterError(f"invalid YAML front matter: {problem}", path=display_path, line=line) from exc
    except ValueError as exc:
        raise FrontMatterError(f"invalid front matter: {exc}", path=display_path, line=1) from exc
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise FrontMatterError(
            "front matter must be a YAML mapping of names to values", path=display_path, line=2
        )
    check_front_matter(metadata, match.group(1), display_path)
    return SourceFile(display_path, text, metadata, match.end())


MAX_SIDEBAR_POSITION = 2**53  # integers a float (and JSON readers) hold exactly

# Fields Bookwise turns into text: a list or mapping here would be stringified into the index.
TEXT_FIELDS = ("title", "slug", "id", "sidebar_label", "description", "module", "chapter", "content_type")


def check_front_matter(metadata: dict[str, Any], yaml_text: str, display_path: str) -> None:
    """The one check of front-matter value types, at read time, so `--dry-run` and a real run agree."""

    def fail(name: str, problem: str) -> None:
        found = re.search(rf"^{re.escape(name)}[ \t]*:", yaml_text, re.M)
        line = yaml_text.count("\n", 0, found.start()) + 2 if found else 2  # +1 opening '---', +1 1-based
        raise FrontMatterError(f"front matter '{name}' {problem}", path=display_path, line=line)

    # Values are described by type, never printed: YAML aliases can make a tiny list print as gigabytes.
    for name in TEXT_FIELDS:
        value = metadata.get(name)
        if isinstance(value, list | dict | set):
            fail(name, f"must be text, not a {'list' if isinstance(value, list | set) else 'mapping'}")
        if isinstance(value, float) and not math.isfinite(value):
            fail(name, f"must be text, not the number {value}")
    position = metadata.get("sidebar_position")
    if isinstance(position, list | dict | set):
        fail("sidebar_position", "must be a number, not a list or mapping")
    if isinstance(position, float) and not math.isfinite(position):
        fail("sidebar_position", f"must be a finite number, not {position}")
    if isinstance(position, int) and abs(position) > MAX_SIDEBAR_POSITION:
        # 10**400 overflowed float() with a traceback; the payload and Qdrant want 64-bit numbers anyway.
        fail(
            "sidebar_position", f"must be a number between -{MAX_SIDEBAR_POSITION} and {MAX_SIDEBAR_POSITION}"
        )
    tags = metadata.get("tags")
    if isinstance(tags, list):
        for tag in tags:
            if isinstance(tag, list | set) or (
                isinstance(tag, dict) and isinstance(tag.get("label"), list | dict)
            ):
                fail("tags", "must list names or {label: name} mappings, not nested lists")
