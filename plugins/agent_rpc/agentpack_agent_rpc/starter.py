"""``agentpack rpc init``: a starter evaluation, an agent written with the SDK and a manifest that passes as written.

The manifest sets ``cwd: .``, so it runs from any directory. Its target
names ``python`` when the ``python`` on ``PATH`` can import the SDK (a
virtual environment that is active, or the same one), else the interpreter
running agentpack, by its path.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from agentpack.io.errors import AgentpackError
from agentpack.io.fsutil import SHARED, atomic_write_text
from agentpack.kernel.registry import SchemaInfo, schema_modeline

AGENT = '''"""A starter agent for the agent evaluation protocol, written with agentpack's SDK.

Every step echoes its input, says what it did in evaluation_context, and
reports one tool call. Replace the body of ``step`` with your agent.
"""

from agentpack.agents import Agent, Result

agent = Agent("starter-agent", capabilities={"tool_calls": {}, "evaluation_context": {}})
inputs: list[str] = []


@agent.step
def step(text: str) -> Result:
    inputs.append(text)
    return Result(
        public_output=f"You said: {text}",
        evaluation_context=f"Turn {len(inputs)}: repeated the input back.",
        tool_calls=[{"name": "repeat", "arguments": {"text": text}}],
    )


@agent.reset
def reset() -> None:
    inputs.clear()


if __name__ == "__main__":
    agent.main()  # stdio; --http [--port N] serves http://127.0.0.1:N/ecp
'''

MANIFEST = """{modeline}
# A starter evaluation of agent.py: agentpack rpc run -m {manifest}
manifest_version: v1
name: starter evaluation
target: {target}
cwd: .  # agentpack only: start the agent in this folder, from wherever the run starts

scenarios:
  - name: repeats the input
    steps:
      - input: good morning
        graders:
          - {{type: text_match, condition: contains, value: good morning}}
          - {{type: text_match, field: evaluation_context, condition: contains, value: repeated}}
          - {{type: tool_usage, tool_name: repeat, arguments: {{text: good morning}}}}
  - name: remembers the conversation
    steps:
      - input: one
        graders:
          - {{type: text_match, field: evaluation_context, condition: contains, value: Turn 1}}
      - input: two
        graders:
          - {{type: text_match, field: evaluation_context, condition: contains, value: Turn 2}}
"""


def python_command() -> str:
    """``python`` when that command can import the SDK, else the path of the interpreter running agentpack."""
    found = shutil.which("python")
    if found is not None:
        if Path(found).absolute().parent == Path(sys.executable).absolute().parent:
            return "python"
        check = [found, "-c", "import agentpack.agents"]
        try:
            if subprocess.run(check, capture_output=True, timeout=30, check=False).returncode == 0:
                return "python"
        except (OSError, subprocess.TimeoutExpired):
            pass
    return sys.executable


def write_starter(
    directory: Path, *, force: bool = False, schemas: Mapping[str, SchemaInfo] | None = None
) -> list[Path]:
    """Write ``agent.py`` and ``manifest.yaml`` into ``directory`` (made if needed); the paths written.
    With ``schemas`` (``host.schemas()``), the manifest starts with a ``$schema`` line to an exported copy.

    Raises ``AgentpackError`` when either file exists and ``force`` is false.
    """
    agent, manifest = directory / "agent.py", directory / "manifest.yaml"
    existing = [path for path in (agent, manifest) if path.exists()]
    if existing and not force:
        raise AgentpackError(
            f"{', '.join(map(str, existing))} already exist{'s' if len(existing) == 1 else ''}",
            hint="agentpack rpc init --force replaces them",
        )
    directory.mkdir(parents=True, exist_ok=True)
    target = shlex.join([python_command(), "agent.py"])
    if not re.fullmatch(r"[\w./+-]+( [\w./+-]+)*", target):  # a path YAML would misread: quote it
        target = json.dumps(target)
    atomic_write_text(agent, AGENT, mode=SHARED)
    modeline = schema_modeline(schemas, "agent-rpc/manifest", manifest, directory) if schemas else ""
    text = MANIFEST.format(modeline=modeline, manifest=shlex.quote(str(manifest)), target=target).lstrip("\n")
    atomic_write_text(manifest, text, mode=SHARED)
    return [agent, manifest]
