"""``agentpack skill-md new``: a plain Agent Skill (one SKILL.md) that passes ``agentpack validate --strict``."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentpack.io.errors import AgentpackError

NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SKILL_MD = """---
name: {name}
description: {description}
---

# {title}

Say here what this skill does and the steps an agent follows when it is active. Keep this file short:
put long references in files beside it and name them here, so an agent reads them only when needed.

## Steps

1. Read the request and check that it is one this skill is for.
2. Do the work, one step at a time.
3. Say what was done, and what was not.
"""


def new_skill(directory: Path, description: str | None = None) -> Path:
    """Write ``directory/SKILL.md`` (the folder is the skill's name); the path written."""
    from agentpack.io.fsutil import SHARED, atomic_write_text

    name = directory.resolve().name
    if not NAME.match(name) or len(name) > 64:
        raise AgentpackError(
            f"'{name}' cannot name a skill: lowercase letters, digits and single hyphens, at most 64",
            hint="the folder's name is the skill's name: pick a folder like my-skill",
        )
    target = directory / "SKILL.md"
    if target.exists():
        raise AgentpackError(f"{target} already exists", file=str(target))
    title = name.replace("-", " ").capitalize()
    text = description or f"{title}. Say what it does and when to use it: an agent reads this to choose it."
    body = SKILL_MD.format(name=name, description=json.dumps(text), title=title)  # JSON: a quoted YAML string
    atomic_write_text(target, body, mode=SHARED)
    return target
