"""The Agent Skills format: SKILL.md rules and prompt output, and the built-in skill format plugin."""
