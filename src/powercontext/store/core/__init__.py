"""The dialect-neutral half of both stores: statements, row mapping and the Atomic Memory, family, code and Prompt
logic that the SQLite and OceanBase adapters share (see ``core.store.SqlStore``)."""
