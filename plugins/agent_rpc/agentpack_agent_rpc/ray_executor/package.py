"""What travels with a Ray job: the manifest's folder (size-checked), the parsed manifest, and the judge's settings.

The folder goes as Ray's ``runtime_env`` ``working_dir`` (Ray leaves out
``.git``, ``.venv``, ``venv``, ``__pycache__`` and what ``.gitignore`` or
``.rayignore`` lists); on a node it is unpacked and becomes the working
directory, and ``relocate`` points the manifest's paths there. The judge's
environment variables (an API key among them) go through the object store,
never into the job's runtime environment, which Ray shows in clear.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from agentpack.io.errors import AgentpackError

from ..manifest.model import Manifest, Target

SKIPPED_DIRS = frozenset({".git", ".venv", "venv", "__pycache__"})
"""Ray's default ``working_dir`` excludes (``RAY_RUNTIME_ENV_DEFAULT_EXCLUDES``), left out of the size too."""
JUDGE_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ECP_LLM_JUDGE_MODEL",
    "ECP_LLM_JUDGE_TEMPERATURE",
    "ECP_LLM_JUDGE_BASE_URL",
)
JUDGE_ENV_PREFIX = "AGENTPACK_AGENT_RPC_JUDGE_"
MIB = 1024 * 1024


def check_size(root: Path, limit_mb: float) -> int:
    """The bytes of ``root`` that travel; an ``AgentpackError`` naming the biggest entries when over ``limit_mb``."""
    limit = limit_mb * MIB
    total = 0
    sizes: dict[str, int] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        top = Path(folder).relative_to(root).parts
        for name in files:
            try:
                size = os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
            total += size
            entry = top[0] + "/" if top else name
            sizes[entry] = sizes.get(entry, 0) + size
    if total > limit:
        biggest = sorted(sizes.items(), key=lambda item: -item[1])[:3]
        listed = ", ".join(f"{name} ({size / MIB:.1f} MiB)" for name, size in biggest)
        raise AgentpackError(
            f"the manifest's folder {root} is {total / MIB:.1f} MiB, more than the {limit_mb:g} MiB that may "
            f"travel with a Ray job; biggest: {listed}",
            hint="keep the manifest in a folder with only what the agent needs, list the rest in .rayignore, "
            "or raise AGENTPACK_AGENT_RPC_RAY_MAX_UPLOAD_MB",
        )
    return total


def judge_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The judge's settings from this machine's environment, over the project configuration's (sent to nodes
    through the object store: they do not read the driver's configuration file)."""
    from ..env import file_settings

    return {
        **file_settings(),
        **{k: v for k, v in environ.items() if k in JUDGE_ENV or k.startswith(JUDGE_ENV_PREFIX)},
    }


def uses_judge(manifest: Manifest) -> bool:
    return any(spec.type == "llm_judge" for s in manifest.scenarios for step in s.steps for spec in step.graders)


def relocate(manifest: Manifest, here: Path) -> Manifest:
    """The manifest with its folder moved to ``here`` (a node's copy): root, path, the agent's cwd and argv."""
    root = str(manifest.root)

    def move(value: str) -> str:
        if value == root or value.startswith(root + os.sep):
            return os.path.normpath(here / os.path.relpath(value, root))
        return value

    target = manifest.target
    command = target.command
    if isinstance(command, list):
        command = [move(arg) for arg in command]
    moved = Target(**{**target.as_dict(), "command": command, "cwd": move(target.cwd) if target.cwd else None})
    return Manifest(**{**manifest.as_dict(), "target": moved, "root": here, "path": here / manifest.path.name})
