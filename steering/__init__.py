"""Natural-language steering (RecBot, arXiv 2509.21317): a user's command -> structured preferences ->
a plan of tools over the candidates. Map of the modules: steering/README.md.

Below the loop (graph/ imports the preferences and the hard-constraint check), above llm/ and
recmodels/; it reads no settings (the application passes a ``steering.config.ParserConfig``) and
imports nothing of lab/, where the simulator, the teacher and the training live.
"""
