"""The bottom layer of LLM use: the client (one bounded, counted structured-output call), the endpoint's
configuration, and the usage arithmetic. Imports nothing of the project's other packages."""
