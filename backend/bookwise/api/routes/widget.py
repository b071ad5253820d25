"""The widget bundle at ``/widget.js`` (the site's pages load it from the API's origin), and its Markdown
renderer at ``/widget-markdown.js``, which the widget loads from beside itself when its panel first opens."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from bookwise.api.deps import ServicesDep
from bookwise.errors import NotFoundError

router = APIRouter()


@router.get("/widget.js", response_model=None)
async def widget(shared: ServicesDep) -> FileResponse:
    return _bundle(shared.widget_path)


@router.get("/widget-markdown.js", response_model=None)
async def widget_markdown(shared: ServicesDep) -> FileResponse:
    # Next to the widget's bundle, named after it: build.mjs writes the two together.
    path = shared.widget_path
    return _bundle(path.with_name(f"{path.stem}-markdown{path.suffix}"))


def _bundle(path: Path) -> FileResponse:
    if not path.is_file():
        raise NotFoundError(f"the widget bundle {path.name} is missing")
    return FileResponse(path, media_type="text/javascript", headers={"Cache-Control": "public, max-age=300"})
