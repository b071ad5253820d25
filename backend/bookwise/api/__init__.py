"""The HTTP API: FastAPI app, SSE answers, guards, feedback."""
