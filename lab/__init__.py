"""Fitting and measuring, above the service: what trains, evaluates or builds data. The service (app/)
never imports it."""
