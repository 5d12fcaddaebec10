"""Shared fixtures of the ECP tests: fresh packs built from the scaffold or the conformance example."""

from __future__ import annotations

import shutil
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
    from agentpack_ecp.build import build_pack
    from agentpack_ecp.scaffold import scaffold

    root = tmp_path / "my-expert"
    scaffold(root)
    build_pack(root)
    return root
