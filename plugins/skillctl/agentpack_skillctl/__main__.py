"""``python -m agentpack_skillctl`` is ``skillctl``."""

from .script import run_script

run_script()
