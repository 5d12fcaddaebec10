"""The plugin passes agentpack's conformance kit, for a skill folder and for a skills/ tree."""

from __future__ import annotations

from pathlib import Path

from skillctl_testkit import manifest, write_skill

from agentpack.testing import FormatPluginConformance


class TestSkillFolderConformance(FormatPluginConformance):
    plugin_name = "skillctl"
    format_name = "skillctl"
    module = "agentpack_skillctl.plugin"
    evaluates_offline = True

    def make_valid_pack(self, tmp_path: Path) -> Path:
        return write_skill(tmp_path / "skills", "demo-echo")

    def make_invalid_pack(self, tmp_path: Path) -> Path:
        return write_skill(tmp_path / "skills", "demo-echo", data=manifest(version="1.0", runtime__command=["/bin/sh"]))


class TestSkillTreeConformance(FormatPluginConformance):
    plugin_name = "skillctl"
    format_name = "skillctl"
    module = "agentpack_skillctl.plugin"

    def make_valid_pack(self, tmp_path: Path) -> Path:
        write_skill(tmp_path / "skills", "demo-echo")
        write_skill(tmp_path / "skills", "other-echo", data=manifest("demo.other"))
        return tmp_path / "skills"

    def make_invalid_pack(self, tmp_path: Path) -> Path:
        write_skill(tmp_path / "skills", "demo-echo")
        write_skill(tmp_path / "skills", "twin-echo")  # the same id twice
        return tmp_path / "skills"
