import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples" / "openexperts"
REFERENCE = ROOT / ".." / "shared" / "reference" / "openexperts" / "radiant-sales-expert-fixture"


@pytest.fixture
def acme(tmp_path: Path) -> Path:
    """A fresh copy of the example package (ours), safe to mutate."""
    target = tmp_path / "acme-support"
    shutil.copytree(EXAMPLES / "acme-support", target, ignore=shutil.ignore_patterns(".openexperts"))
    return target


@pytest.fixture
def reference_pack(tmp_path: Path) -> Path:
    if not REFERENCE.is_dir():
        pytest.skip(f"reference package not present at {REFERENCE}")
    target = tmp_path / "radiant"
    shutil.copytree(REFERENCE, target)
    return target


def _edit_yaml(path: Path, change: Callable[[Any], Any]) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _edit_front(path: Path, change: Callable[[dict], Any]) -> None:
    text = path.read_text()
    _, front, body = text.split("---", 2)
    data = yaml.safe_load(front)
    change(data)
    path.write_text("---\n" + yaml.safe_dump(data, sort_keys=False) + "---" + body)


@pytest.fixture
def edit_yaml():
    return _edit_yaml


@pytest.fixture
def edit_front():
    return _edit_front
