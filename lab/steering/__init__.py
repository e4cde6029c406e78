"""Steering's lab: the command simulator, the LLM teacher, the learned parser's training, labels from
the natural-command sets, and the scoring and evaluation of parsers. Serving a command imports none of it."""
