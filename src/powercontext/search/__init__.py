"""Per-family readers and the ``auto`` mode policy."""
