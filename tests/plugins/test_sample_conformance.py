"""The sample third-party plugin passes the same conformance kit as the built-in plugins."""

from pathlib import Path

import pytest

from agentpack import hookimpl
from agentpack.kernel.host import HookResultError
from agentpack.kernel.models import Finding
from agentpack.testing import FormatPluginConformance

SAMPLE_SRC = Path(__file__).parent / "agentpack_sample"


class TestSampleConformance(FormatPluginConformance):
    plugin_name = "sample"
    format_name = "sample-todo"
    module = "agentpack_sample.plugin"
    query_question = "docs"

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


class _CarelessCheck:
    """A cross-cutting check that assumes every pack is its own: it crashes on anyone else's."""

    @hookimpl
    def agentpack_check(self, pack, strict):
        return [Finding.info("CARELESS", pack.data["todo"])]


class _WrongTypeCheck:
    @hookimpl
    def agentpack_check(self, pack, strict):
        return {"findings": []}


class _KitFor(FormatPluginConformance):  # not collected: it is driven by the tests below
    format_name = "none-of-its-own"


@pytest.mark.parametrize(
    "plugin,expected",
    [
        (_CarelessCheck(), "agentpack_check of careless crashed on a conformance-foreign pack"),
        (_WrongTypeCheck(), "plugin 'careless' returned dict from agentpack_check"),
    ],
    ids=["crash", "wrong type"],
)
def test_the_kit_catches_a_plugin_that_breaks_foreign_packs(
    agentpack_host, register_plugin, tmp_path, plugin, expected
):
    register_plugin(plugin, name="careless")
    kit = _KitFor()
    kit.plugin_name = "careless"
    with pytest.raises((pytest.fail.Exception, HookResultError), match=expected):
        kit.test_checks_leave_foreign_packs_alone(agentpack_host, register_plugin, tmp_path)
