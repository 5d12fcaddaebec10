"""Fixtures for the dci tests; makes ``dci_helpers`` importable (tests run in importlib mode)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from dci_helpers import REFERENCE, write_skill


@pytest.fixture
def skill_factory():
    return write_skill


@pytest.fixture
def reference_dir() -> Path:
    if not REFERENCE.is_dir():
        pytest.skip(f"reference data not available at {REFERENCE} (../shared/reference/dci)")
    return REFERENCE
