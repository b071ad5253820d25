"""An ingest as ``bookwise ingest`` runs it: the index generation together with the passage vectors
the retriever ranks passages with. The index layer knows nothing of retrieval's passages, so what
builds an index to be served comes through here instead of each caller remembering to pass them: a
generation without them makes every server of it embed the book's passages again."""

from __future__ import annotations

from typing import Any

from bookwise.index.build import IngestReport, run_ingest
from bookwise.ingest.site import SiteConfig
from bookwise.retrieval.passage_rank import book_passage_inputs_within
from bookwise.settings import IndexBuildSettings


def ingest_book(settings: IndexBuildSettings, site: SiteConfig, **options: Any) -> IngestReport:
    """``run_ingest`` with the passages a server of ``settings`` ranks; ``options`` are its others."""
    passages = book_passage_inputs_within(settings.section_max_tokens)
    return run_ingest(settings, site, passage_inputs=passages, **options)
