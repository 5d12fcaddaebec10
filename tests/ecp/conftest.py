"""Shared fixtures of the ECP tests: fresh packs built from the scaffold or the conformance example."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ecp" / "conformance-pack"


def copy_example(tmp_path: Path) -> Path:
    target = tmp_path / "conformance-pack"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(".staging-*", ".lifecycle", "logs"))
    return target


@pytest.fixture
def example_pack(tmp_path: Path) -> Path:
    """A private copy of the conformance pack (indexes as committed)."""
    return copy_example(tmp_path)


@pytest.fixture
def new_pack(tmp_path: Path) -> Path:
    """A freshly scaffolded and built pack."""
    from agentpack_ecp.index.build import build_pack
    from agentpack_ecp.pack.scaffold import scaffold

    root = tmp_path / "my-expert"
    scaffold(root)
    build_pack(root)
    return root


class Ecpctl:
    """The reference runtime's CLI: ``ecpctl("validate", ...)`` returns ``(exit code, JSON output)``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, *args: str) -> tuple[int, dict]:
        proc = subprocess.run(
            [str(self.path), "--json", *args], check=False, capture_output=True, text=True, timeout=300
        )
        try:
            return proc.returncode, json.loads(proc.stdout)
        except ValueError:
            raise AssertionError(f"ecpctl {args[0]} printed no JSON: {proc.stdout[:300]} {proc.stderr[:300]}") from None


@pytest.fixture(scope="module")
def ecpctl() -> Ecpctl:
    """``ecp-reference==1.0.0`` in a throwaway venv (interop tests only; skips without a registry)."""
    from agentpack.testing import reference_venv

    return Ecpctl(reference_venv("ecp-reference-1.0.0", "ecp-reference==1.0.0") / "bin" / "ecpctl")
