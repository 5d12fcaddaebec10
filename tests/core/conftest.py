import sys
from pathlib import Path

import pytest

SAMPLE_SRC = Path(__file__).parents[1] / "plugins" / "agentpack_sample"


@pytest.fixture
def sample_plugin():
    """The sample third-party plugin module, imported from its source folder (not installed)."""
    sys.path.insert(0, str(SAMPLE_SRC))
    try:
        import agentpack_sample.plugin as module

        yield module
    finally:
        sys.path.remove(str(SAMPLE_SRC))


@pytest.fixture
def todo_pack(tmp_path):
    def make(text: str, name: str = "todos") -> Path:
        root = tmp_path / name
        root.mkdir()
        (root / "todo.txt").write_text(text)
        return root

    return make
