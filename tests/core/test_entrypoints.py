"""The fast entry-point scanner agrees with importlib.metadata."""

import importlib.metadata

from agentpack.kernel.entrypoints import _parse, entry_points


def test_agrees_with_importlib_metadata():
    ours = {(e.name, e.value) for e in entry_points("agentpack")}
    theirs = {(e.name, e.value) for e in importlib.metadata.entry_points(group="agentpack")}
    assert ours == theirs and ours


def test_versions_and_distributions():
    ecp = next(e for e in entry_points("agentpack") if e.name == "ecp")
    assert (ecp.distribution, ecp.version) == ("agentpack-ecp", importlib.metadata.version("agentpack-ecp"))


def test_first_distribution_on_the_path_wins(tmp_path, monkeypatch):
    for folder, value in (("a", "first.mod"), ("b", "second.mod")):
        dist = tmp_path / folder / "shadow_plugin-1.0.dist-info"
        dist.mkdir(parents=True)
        (dist / "entry_points.txt").write_text(f"[agentpack]\nshadow = {value}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "b"))
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    assert [e.value for e in entry_points("agentpack") if e.name == "shadow"] == ["first.mod"]


def test_parse_sections_comments_and_spacing():
    text = "# c\n[console_scripts]\nx = y:z\n\n[agentpack]\n ecp = agentpack_ecp.plugin \n; note\n[other]\nq=r\n"
    assert _parse(text, "agentpack") == [("ecp", "agentpack_ecp.plugin")]
    ep = entry_points("agentpack")[0]
    assert ep.load() is not None
