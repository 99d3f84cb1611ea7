"""Messages, turns, tokens, budgets, trimming, eviction, the ladder, the store."""
