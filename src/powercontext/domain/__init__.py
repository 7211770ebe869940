"""Framework-free domain rules: identities, families, lifecycle."""
