"""The plugin manager: entry points, allow and block lists, broken plugins, optional dependencies."""

import subprocess
import sys

import pytest

from agentpack import hookimpl
from agentpack.io.errors import MissingDependencyError, PackError, PluginError, require
from agentpack.io.installhint import command
from agentpack.kernel.host import DEFAULT_PLUGINS, Host
from agentpack.kernel.plugins import create_plugin_manager
from agentpack.testing import ClaimingPlugin, run_cli

BUILTIN_PLUGINS = {"ecp", "agent_rpc", "dci", "openexperts", "skillctl"}


def names(pm):
    return {name for name, _ in pm.list_name_plugin()} - set(DEFAULT_PLUGINS)


def test_entry_points_load_every_installed_plugin():
    assert names(create_plugin_manager()) >= BUILTIN_PLUGINS


def test_allow_list(monkeypatch):
    monkeypatch.setenv("AGENTPACK_PLUGINS", "ecp, dci")
    pm = create_plugin_manager()
    assert names(pm) == {"ecp", "dci"}
    assert set(Host(pm).formats()) == {"agent-skill", "ecp", "dci"}


def test_empty_allow_list_loads_none(monkeypatch):
    monkeypatch.setenv("AGENTPACK_PLUGINS", "")
    assert names(create_plugin_manager()) == set()


def test_block_list(monkeypatch):
    monkeypatch.setenv("AGENTPACK_DISABLE_PLUGINS", "ecp,skillctl")
    assert names(create_plugin_manager()).isdisjoint({"ecp", "skillctl"})


def test_broken_entry_point_names_the_plugin(tmp_path, monkeypatch):
    dist = tmp_path / "broken_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[agentpack]\nbroken = no_such_module_here.plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="plugin 'broken'") as exc:
        create_plugin_manager()
    assert "AGENTPACK_DISABLE_PLUGINS=broken" in str(exc.value)
    monkeypatch.setenv("AGENTPACK_DISABLE_PLUGINS", "broken")
    assert "broken" not in names(create_plugin_manager())


def test_no_plugin_is_loaded_at_import_time():
    code = (
        "import sys, agentpack, agentpack.cli.app, agentpack.kernel.hookspecs; "
        "print(sorted(m for m in sys.modules if m.startswith('agentpack_')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cli_help_imports_no_plugin_command_module():
    code = (
        "import sys; from agentpack.cli.app import main; main(['--help']); "
        "print(sorted(m for m in sys.modules if m.startswith('agentpack_') and m.endswith('.cli')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_require_names_the_extra():
    with pytest.raises(MissingDependencyError) as exc:
        require("surely_not_installed_mod", distribution="agentpack-ecp", extra="embeddings", feature="embeddings")
    assert exc.value.hint == command("agentpack-ecp", "embeddings")
    assert "sentence-transformers" in exc.value.hint
    assert "surely_not_installed_mod" in str(exc.value)


def test_missing_optional_dependency_is_a_clear_cli_error(agentpack_host, register_plugin, sample_plugin, todo_pack):
    class NeedsExtra(ClaimingPlugin):
        @hookimpl
        def agentpack_query(self, pack, request):
            require("surely_not_installed_mod", distribution="agentpack-sample", extra="fancy")

    register_plugin(sample_plugin, name="sample")
    register_plugin(NeedsExtra(), name="needs-extra")
    result = run_cli(["query", str(todo_pack("- [ ] a\n")), "a"])
    assert result.exit_code == 2
    assert command("agentpack-sample", "fancy") in result.stderr


def test_load_errors(agentpack_host, tmp_path):
    with pytest.raises(PackError, match="no such file"):
        agentpack_host.load(tmp_path / "missing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(PackError, match="not a pack of any installed format"):
        agentpack_host.load(tmp_path / "plain")
    with pytest.raises(PackError, match="unknown format 'nope'"):
        agentpack_host.load(tmp_path / "plain", "nope")


def test_detection_prefers_confidence_then_name(agentpack_host, register_plugin, tmp_path):
    from agentpack.kernel.packtypes import Detection

    class Two:
        @hookimpl
        def agentpack_detect(self, path):
            return Detection(format="zeta", confidence=0.5)

    class One:
        @hookimpl
        def agentpack_detect(self, path):
            return Detection(format="alpha", confidence=0.5)

    register_plugin(Two(), name="two")
    register_plugin(One(), name="one")
    assert [d.format for d in agentpack_host.detect_all(tmp_path)][:2] == ["alpha", "zeta"]


def test_plugin_infos_have_versions():
    infos = {i.name: i for i in Host(create_plugin_manager()).plugin_infos()}
    assert infos["ecp"].distribution == "agentpack-ecp" and infos["ecp"].version
    assert infos["agentpack.skills.plugin"].builtin


def test_service_modules_import_without_pluggy():
    code = "import sys, agentpack.io.errors, agentpack.io.hashing, agentpack.io.paths; print('pluggy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    code = "from agentpack import hookimpl; import agentpack; print(agentpack.hookimpl is hookimpl)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "True"
