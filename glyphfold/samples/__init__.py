"""Shipped sample data: the demo coding session and the mixed benchmark transcript."""
