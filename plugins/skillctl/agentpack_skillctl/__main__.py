"""``python -m agentpack_skillctl`` is ``skillctl``."""

from .cli import run_script

run_script()
