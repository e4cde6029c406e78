"""HTTP layer: thin routers over app/services (versioned under /v1)."""
