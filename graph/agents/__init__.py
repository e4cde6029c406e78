"""Recommendation and user agents: one interface, offline and LLM implementations."""
