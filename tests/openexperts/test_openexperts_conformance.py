import shutil
from pathlib import Path

from agentpack.testing import FormatPluginConformance

EXAMPLE = Path(__file__).parents[2] / "examples" / "openexperts" / "acme-support"


class TestOpenexpertsConformance(FormatPluginConformance):
    plugin_name = "openexperts"
    format_name = "openexperts"
    module = "agentpack_openexperts.plugin"

    def make_valid_pack(self, tmp_path: Path) -> Path:
        target = tmp_path / "acme"
        shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(".openexperts"))
        return target

    def make_invalid_pack(self, tmp_path: Path) -> Path:
        target = self.make_valid_pack(tmp_path)
        (target / "functions" / "draft-reply.md").unlink()
        return target


def test_detects_the_manifest_file_itself(agentpack_host, acme):
    detection = agentpack_host.detect(acme / "expert.yaml")
    assert detection.format == "openexperts" and detection.confidence == 0.9
    pack = agentpack_host.load(acme / "expert.yaml")
    assert pack.root == acme and pack.name == "acme-support-expert" and pack.version == "1.2.0"


def test_beats_the_plain_skill_format(agentpack_host, acme):
    (acme / "SKILL.md").write_text("---\nname: acme-support\ndescription: x\n---\nbody\n")
    assert agentpack_host.detect(acme).format == "openexperts"


def test_other_formats_never_reach_the_loader(agentpack_host):
    """Owner dispatch: the host sends only expert packages to this plugin's agentpack_load."""
    for format in agentpack_host.formats():
        impls = agentpack_host.owner_hook("agentpack_load", format).get_hookimpls()
        assert ("openexperts" in {impl.plugin_name for impl in impls}) == (format == "openexperts"), format
