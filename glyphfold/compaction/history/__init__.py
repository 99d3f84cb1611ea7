"""The history core (SPEC §1-4): the message model, wire formats, turns and steps, tokens,
budgets, trimming, eviction, overflow detection and events. Imports neither the ladder nor
the store."""
