"""Sources: the exact evidence captured from agent sessions (redacted before storing), and its extraction."""
