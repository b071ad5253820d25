"""Docusaurus site → Documents → Sections → Chunks. Pure functions over local files, no network."""
