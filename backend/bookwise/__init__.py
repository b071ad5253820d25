"""Bookwise: grounded, cited, streamed answers for Docusaurus sites and online textbooks."""

__version__ = "0.1.0"
