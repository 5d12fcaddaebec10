"""The sample third-party plugin passes the same conformance kit as the built-in plugins."""

from pathlib import Path

import pytest

from agentpack.testing import FormatPluginConformance

SAMPLE_SRC = Path(__file__).parent / "agentpack_sample"


class TestSampleConformance(FormatPluginConformance):
    plugin_name = "sample"
    format_name = "sample-todo"
    module = "agentpack_sample.plugin"

    @pytest.fixture(autouse=True)
    def _registered(self, register_plugin, monkeypatch):
        monkeypatch.syspath_prepend(str(SAMPLE_SRC))
        monkeypatch.setenv("PYTHONPATH", str(SAMPLE_SRC))
        import agentpack_sample.plugin as module

        register_plugin(module, name="sample")

    def make_valid_pack(self, tmp_path):
        tmp_path.mkdir(parents=True, exist_ok=True)
        (tmp_path / "todo.txt").write_text("- [ ] write docs\n")
        return tmp_path

    def make_invalid_pack(self, tmp_path):
        tmp_path.mkdir(parents=True, exist_ok=True)
        (tmp_path / "todo.txt").write_text("write docs\n")
        return tmp_path
