"""The transcript store and session tree (SQLite, PostgreSQL)."""
