"""Helpers for the skillctl tests: throwaway skill folders built from small Python programs."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "skills"
REFERENCE = REPO / ".." / "shared" / "reference" / "skillctl"


def manifest(skill_id: str = "demo.echo", **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "apiVersion": "skill/v1",
        "kind": "Skill",
        "id": skill_id,
        "name": "Demo",
        "version": "1.0.0",
        "description": "A test skill.",
        "governance": {"specId": "SPEC-1", "oneSkillPerCommit": True, "concepts": [], "synchronizations": []},
        "runtime": {"type": "python", "command": ["python3", "impl/run.py"], "cwd": ".", "timeoutMs": 20000},
        "io": {
            "inputSchema": "schemas/input.schema.json",
            "outputSchema": "schemas/output.schema.json",
            "input": {"transport": "stdin", "encoding": "json"},
            "output": {"transport": "stdout", "encoding": "json"},
        },
        "determinism": {"network": "forbidden", "time": "forbidden", "randomness": "forbidden"},
        "security": {
            "access": {
                "filesystem": {"read": [], "write": []},
                "env": {"read": []},
                "subprocess": {"allowed": False},
                "network": {"allowed": False},
            }
        },
        "observability": {"logs": {"format": "jsonl", "destination": "stderr"}, "runReport": {"enabled": True}},
    }
    for key, value in overrides.items():
        target = data
        parts = key.split("__")
        for part in parts[:-1]:
            target = target[part]
        if value is None:
            target.pop(parts[-1], None)
        else:
            target[parts[-1]] = value
    return data


ECHO = """
import json, sys
req = json.load(sys.stdin)
sys.stderr.write(json.dumps({"level": "info", "event": "echo"}) + "\\n")
json.dump({"echo": req.get("value")}, sys.stdout)
"""

OBJECT_IN = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"value": {}},
    "additionalProperties": True,
}
OBJECT_OUT = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["echo"],
    "properties": {"echo": {}},
}


def write_skill(
    parent: Path,
    slug: str = "demo-echo",
    *,
    code: str = ECHO,
    data: dict | None = None,
    input_schema: dict | None = None,
    output_schema: dict | None = None,
    fixtures: dict[str, tuple[Any, Any]] | None = None,
    access: dict | None = None,
) -> Path:
    """Write a complete skill folder ``parent/slug`` (and ``parent/_access.yaml`` when ``access`` is given)."""
    root = parent / slug
    for sub in ("schemas", "impl", "tests", "fixtures"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "skill.yaml").write_text(yaml.safe_dump(data or manifest(), sort_keys=False))
    (root / "README.md").write_text(f"# {slug}\n")
    (root / "schemas" / "input.schema.json").write_text(json.dumps(input_schema or OBJECT_IN))
    (root / "schemas" / "output.schema.json").write_text(json.dumps(output_schema or OBJECT_OUT))
    (root / "impl" / "run.py").write_text(code)
    for case, (inp, out) in (fixtures if fixtures is not None else {"one": ({"value": 1}, {"echo": 1})}).items():
        (root / "fixtures" / f"{case}.input.json").write_text(json.dumps(inp))
        if out is not None:
            (root / "fixtures" / f"{case}.expected.json").write_text(json.dumps(out))
    if access is not None:
        (parent / "_access.yaml").write_text(
            yaml.safe_dump({"apiVersion": "skill-access/v1", "kind": "AccessManifest", **access})
        )
    return root


PYTHON = sys.executable


class YamlParses:
    """The YAML files (``skill.yaml``, ``_access.yaml``) parsed while it is installed, by real path."""

    def __init__(self, monkeypatch: Any) -> None:
        import os
        from collections import Counter

        import agentpack.io.yamlio

        self.parsed: Counter[str] = Counter()
        real = agentpack.io.yamlio.load_yaml

        def load_yaml(path: Any, *args: Any, **kwargs: Any) -> Any:
            self.parsed[os.path.realpath(path)] += 1
            return real(path, *args, **kwargs)

        monkeypatch.setattr(agentpack.io.yamlio, "load_yaml", load_yaml)

    def each_once(self, files: list[Path]) -> bool:
        """Every one of ``files`` was parsed once, and no other YAML file was."""
        import os

        return dict(self.parsed) == {os.path.realpath(f): 1 for f in files}


def processes_with(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line contains ``marker``, seen from the host."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(name))
    return found


def wait_until_gone(marker: str, seconds: float = 5.0) -> list[int]:
    """The processes with ``marker`` still alive after up to ``seconds`` (an empty list when all ended)."""
    deadline = time.monotonic() + seconds
    while (alive := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def needs_bwrap() -> None:
    """Skip, with bubblewrap's reason, where it cannot make a sandbox here."""
    import pytest

    from agentpack_skillctl import bwrap

    if bwrap.probe().error:
        pytest.skip(str(bwrap.probe().error))


def needs_seccomp() -> None:
    """Skip, with the reason, where no seccomp program can be built here."""
    import pytest

    from agentpack_skillctl import syscalls

    try:
        syscalls.program(("no-exec",))
    except syscalls.SeccompUnavailable as exc:
        pytest.skip(str(exc))
