"""Service logic: owns transactions, enforces ownership and locking, runs the loop."""
