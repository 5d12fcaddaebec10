"""The core's conformance kit, for the dci format (a DCI workspace)."""

from __future__ import annotations

from pathlib import Path

from dci_helpers import write_skill

from agentpack.testing import FormatPluginConformance


class TestDciConformance(FormatPluginConformance):
    plugin_name = "dci"
    format_name = "dci"
    module = "agentpack_dci.plugin"

    def make_valid_pack(self, tmp_path: Path) -> Path:
        root = tmp_path / "workspace"
        write_skill(
            root,
            "skills/web-search",
            description="Search the web.",
            contract="DCI/1^strict P(web-search) A(output-format=json)",
        )
        write_skill(root, "skills/plain", description="No contract here.")
        return root

    def make_invalid_pack(self, tmp_path: Path) -> Path:
        root = tmp_path / "workspace"
        write_skill(root, "skills/broken", description="Broken contract.", contract="DCI/1 P(web-search")
        return root
