"""The widget bundle at ``/widget.js`` (the site's pages load it from the API's origin)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse

from bookwise.api.deps import ServicesDep
from bookwise.errors import NotFoundError

router = APIRouter()


@router.get("/widget.js", response_model=None)
async def widget(shared: ServicesDep) -> FileResponse:
    path = shared.widget_path
    if not path.is_file():
        raise NotFoundError(f"the widget bundle {path.name} is missing")
    return FileResponse(path, media_type="text/javascript", headers={"Cache-Control": "public, max-age=300"})
