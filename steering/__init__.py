"""The loop-side steering tools (RecBot, arXiv 2509.21317): structured preferences and their
consolidation, the catalog look-ups, item similarity and the filter/matcher/attenuator/aggregator.

The loop's ``recommend`` node checks proposals against the hard constraints with them; the
application's planner (``steering.planner``) chains them over a candidate list.
"""
