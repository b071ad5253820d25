"""Chunks → vectors → a Qdrant index generation, switched atomically."""
