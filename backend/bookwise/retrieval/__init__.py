"""Retrieval: hybrid search over chunks, ranked sections (small-to-big), and the sufficiency decision."""
