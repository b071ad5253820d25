"""What readers ask, kept for the book's authors: the question log, its store, and the report."""
