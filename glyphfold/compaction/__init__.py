"""Keeping histories inside the window: history (the core), ladder (compaction rungs), store
(transcripts and the session tree). See docs/architecture.md."""
