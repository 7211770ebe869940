"""Request-local recall evidence and rounds."""
