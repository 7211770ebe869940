"""The HTTP Server (FastAPI)."""
