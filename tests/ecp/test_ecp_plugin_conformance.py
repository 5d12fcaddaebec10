"""The core's conformance kit for format plugins, applied to ECP."""

from __future__ import annotations

from pathlib import Path

from agentpack.testing import FormatPluginConformance


class TestEcpConformance(FormatPluginConformance):
    plugin_name = "ecp"
    format_name = "ecp"
    module = "agentpack_ecp.plugin"
    query_question = "How do I get started?"
    evaluates_offline = True

    def make_valid_pack(self, tmp_path: Path) -> Path:
        from agentpack_ecp.index.build import build_pack
        from agentpack_ecp.pack.scaffold import scaffold

        root = tmp_path / "valid-expert"
        scaffold(root)
        build_pack(root)
        return root

    def make_invalid_pack(self, tmp_path: Path) -> Path:
        from agentpack_ecp.pack.scaffold import scaffold

        root = tmp_path / "broken-expert"
        scaffold(root)
        manifest = root / "expert" / "EXPERT.yaml"
        manifest.write_text(manifest.read_text().replace('ecp_version: "1.0"', 'ecp_version: "2.0"'))
        return root
