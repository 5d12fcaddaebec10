"""Graders: the built-in ``text_match``, ``tool_usage`` and ``llm_judge``, and the registry plugins add to."""
