"""Fixtures for the skillctl tests (helpers live in skillctl_testkit, importable from here)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from skillctl_testkit import write_skill


@pytest.fixture(autouse=True)
def private_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Cache entries (prepared skills, content hashes, outputs) go to a per-test folder, never ~/.cache."""
    folder = tmp_path_factory.mktemp("skillctl-cache")
    monkeypatch.setenv("AGENTPACK_SKILLCTL_CACHE_DIR", str(folder))
    monkeypatch.delenv("SKILLCTL_CACHE_DIR", raising=False)
    return folder


@pytest.fixture
def make_skill(tmp_path: Path) -> Callable[..., Path]:
    def make(slug: str = "demo-echo", **kwargs: Any) -> Path:
        return write_skill(tmp_path / "skills", slug, **kwargs)

    return make


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture(scope="session")
def report_validator():
    from agentpack_skillctl.schemas_store import REPORT_SCHEMA, store

    return store().validator(REPORT_SCHEMA)
