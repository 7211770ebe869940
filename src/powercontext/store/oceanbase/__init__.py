"""The OceanBase family store: embedded seekdb (``seekdb:///dir``) or a seekdb/OceanBase server (``oceanbase://``).

The store itself is ``store.OceanBaseStore``; it needs the ``oceanbase`` extra (pymysql, pylibseekdb), so this package
imports nothing eagerly: a SQLite-only install can still import ``engine.EngineUnavailable``.
"""
