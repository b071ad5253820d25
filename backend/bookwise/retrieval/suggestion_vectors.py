"""The suggested questions' vectors, stored with the index generation they were checked against.

A reader who clicks a suggested question asks exactly its text: with its vector in the generation, the
server answers it without embedding anything (``ServingEmbedder`` loads them with the generation).
The checking step embedded most of them already (each is searched as a reader would ask it), so
storing them costs the few that were not searched. A search also embeds, one by one, the words of the
question the book does not hold (``probed_words``: is it asking about something the book never
names?): those of each suggestion are stored too.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bookwise.index.embedders import save_question_vectors
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.topics import probed_words


def store_question_vectors(retriever: Retriever, data_dir: Path, questions: Iterable[str]) -> int:
    """Embed ``questions`` as a search does and store them in the live generation's directory;
    returns how many were stored (0 for an index without generation directories: a Qdrant server)."""
    directory = data_dir / "index" / "generations" / retriever.generation()
    asked = {" ".join(q.split()) for q in questions}
    texts = sorted(asked | {word for question in asked for word in probed_words(question)})
    if not texts or not directory.is_dir():
        return 0
    embedder = retriever.embedder
    vectors = dict(zip(texts, embedder.embed_documents(texts), strict=True))
    save_question_vectors(directory, embedder.model_id, vectors)
    return len(vectors)
