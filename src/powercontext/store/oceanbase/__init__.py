"""The OceanBase family store: embedded seekdb (``seekdb:///dir``) or a seekdb/OceanBase server (``oceanbase://``)."""

from powercontext.store.oceanbase.store import OceanBaseStore

__all__ = ["OceanBaseStore"]
