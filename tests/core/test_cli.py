"""The core CLI: every command, output formats, exit codes, help."""

import json

import click
import pytest

from agentpack import hookimpl
from agentpack.cli.app import cli
from agentpack.testing import ClaimingPlugin, run_cli

BUILTIN_COMMANDS = ["plugins", "detect", "validate", "query", "eval", "mcp", "skill-md"]


@pytest.fixture
def with_sample(agentpack_host, register_plugin, sample_plugin):
    register_plugin(sample_plugin, name="sample")
    return agentpack_host


def test_help_lists_core_and_plugin_commands(with_sample):
    result = run_cli(["--help"])
    assert result.exit_code == 0
    for name in [*BUILTIN_COMMANDS, "todo-stats", "ecp"]:
        assert f"  {name}" in result.stdout


@pytest.mark.parametrize(
    "command",
    [[c] for c in BUILTIN_COMMANDS]
    + [["mcp", "serve"], ["mcp", "tools"], ["skill-md", "read-properties"], ["skill-md", "to-prompt"]],
)
def test_every_command_has_help_with_short_flag(command):
    result = run_cli([*command, "-h"])
    assert result.exit_code == 0 and "Usage:" in result.stdout


@pytest.mark.parametrize("command", ["plugins", "detect", "validate", "query", "eval"])
def test_core_command_help_has_an_example(command):
    assert "Example" in run_cli([command, "-h"]).stdout


def test_plugin_command_groups_have_help(agentpack_host):
    for name, _spec in agentpack_host.commands().items():
        result = run_cli([name, "-h"])
        assert result.exit_code == 0, (name, result.stderr)


def test_version_lists_plugin_versions():
    out = run_cli(["--version"]).stdout
    assert "ecp 0.1.0 (agentpack-ecp)" in out


def test_plugins_json(with_sample):
    data = run_cli(["plugins", "--json"]).json()
    sample = next(p for p in data["plugins"] if p["name"] == "sample")
    assert sample["formats"] == ["sample-todo"]
    assert "agentpack_validate" in sample["hooks"]


def test_detect(with_sample, todo_pack, tmp_path):
    result = run_cli(["detect", "--json", str(todo_pack("- [ ] a\n"))])
    assert result.exit_code == 0 and result.json()["format"] == "sample-todo"
    (tmp_path / "nothing").mkdir()
    assert run_cli(["detect", str(tmp_path / "nothing")]).exit_code == 1


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "sarif", "github", "html", "count"])
def test_validate_every_output_format(with_sample, todo_pack, fmt):
    bad = todo_pack("nope\n")
    result = run_cli(["validate", "-o", fmt, str(bad)])
    assert result.exit_code == 1
    assert result.stdout.strip()


def test_validate_json_envelope_and_strict(with_sample, todo_pack):
    good = todo_pack("- [ ] ab\n")
    data = run_cli(["validate", "--json", str(good)]).json()
    assert data["schema_version"] == 1 and data["command"] == "validate" and data["ok"] is True
    strict = run_cli(["validate", "--strict", "--json", str(good)]).json()
    assert [f["code"] for f in strict["items"][0]["findings"]] == ["TODO002"]
    assert strict["ok"] is True  # warnings do not fail


def test_validate_several_paths_and_unreadable_one(with_sample, todo_pack, tmp_path):
    (tmp_path / "plain").mkdir()
    result = run_cli(["validate", "--json", str(todo_pack("- [ ] abc\n")), str(tmp_path / "plain")])
    data = result.json()
    assert result.exit_code == 1
    assert [i["ok"] for i in data["items"]] == [True, False]
    assert data["items"][1]["findings"][0]["code"] == "PACK"


def test_unknown_output_format_is_a_usage_error(with_sample, todo_pack):
    result = run_cli(["validate", "-o", "yaml", str(todo_pack("- [ ] abc\n"))])
    assert result.exit_code == 2
    assert "choose from" in result.stderr and "sarif" in result.stderr


def test_query_text_and_json(with_sample, todo_pack):
    pack = todo_pack("- [ ] buy milk\n")
    text = run_cli(["query", str(pack), "milk"])
    assert text.exit_code == 0 and "buy milk" in text.stdout and "[1] todo.txt#L1" in text.stdout
    data = run_cli(["query", str(pack), "milk", "--json", "--source-id", "s", "--filter", "a=b"]).json()
    assert data["response"] == {"matches": [{"line": 1, "text": "buy milk"}]}
    bad = run_cli(["query", str(pack), "milk", "--filter", "novalue"])
    assert bad.exit_code == 2


def test_query_unsupported_format(tmp_path):
    skill = tmp_path / "my-skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: my-skill\ndescription: d\n---\n")
    result = run_cli(["query", str(skill), "anything"])
    assert result.exit_code == 2 and "does not support queries" in result.stderr


def test_eval_exit_codes_and_report_file(with_sample, todo_pack, tmp_path):
    done = todo_pack("- [x] a\n", name="done")
    assert run_cli(["eval", str(done)]).exit_code == 0
    open_ = todo_pack("- [x] a\n- [ ] b\n", name="open")
    out = tmp_path / "reports" / "r.html"
    result = run_cli(["eval", str(open_), "--report", str(out), "-o", "junit"])
    assert result.exit_code == 1
    assert "<testsuites" in result.stdout
    assert out.read_text().startswith("<!doctype html>")


def test_plugin_command_runs(with_sample, todo_pack):
    result = run_cli(["todo-stats", str(todo_pack("- [x] a\n- [ ] b\n"))])
    assert result.stdout.strip() == "1 done, 1 open"


def test_mcp_tools_listing(with_sample):
    data = json.loads(run_cli(["mcp", "tools", "--json"]).stdout)
    assert "sample_count_todos" in {t["name"] for t in data}
    experts = {t["name"]: t for t in data if t["plugin"] == "openexperts"}
    assert experts["experts_dry_run"]["aliases"] == ["experts.dry_run"]  # the former name, still answered
    assert "experts_dry_run  (openexperts)" in run_cli(["mcp", "tools"]).stdout


def test_internal_error_is_exit_3_and_names_the_plugin(with_sample, register_plugin, todo_pack, monkeypatch):
    class Buggy(ClaimingPlugin):
        @hookimpl
        def agentpack_query(self, pack, request):
            raise ZeroDivisionError("oops")

    register_plugin(Buggy(), name="buggy")
    monkeypatch.delenv("AGENTPACK_DEBUG", raising=False)
    result = run_cli(["query", str(todo_pack("- [ ] a\n")), "a"])
    assert result.exit_code == 3
    assert "internal error" in result.stderr and "ZeroDivisionError" in result.stderr
    assert "Traceback" not in result.stderr


def test_usage_error_is_exit_2():
    assert run_cli(["validate"]).exit_code == 2
    assert run_cli(["no-such-command"]).exit_code == 2


def test_shell_completion_script():
    from click.shell_completion import BashComplete

    script = BashComplete(cli, {}, "agentpack", "_AGENTPACK_COMPLETE").source()
    assert "_AGENTPACK_COMPLETE" in script


def test_output_option_completes_reporters(with_sample):
    command = cli.get_command(click.Context(cli), "validate")
    option = next(p for p in command.params if p.name == "output")
    completions = option.shell_complete(click.Context(command), "j")
    assert [c.value for c in completions] == ["json", "junit"]


def test_aborted_evaluation_still_reports_and_exits_2(with_sample, register_plugin, todo_pack, tmp_path):
    class Unreachable(ClaimingPlugin):
        @hookimpl
        def agentpack_evaluate(self, pack, options):
            from agentpack.kernel.models import EvalReport

            return EvalReport(name="x", format=pack.format, aborted="agent unreachable")

    register_plugin(Unreachable(), name="unreachable")
    out = tmp_path / "r.json"
    result = run_cli(["eval", str(todo_pack("- [ ] a\n")), "--report", str(out)])
    assert result.exit_code == 2 and "agent unreachable" in result.stderr
    assert json.loads(out.read_text())["evaluations"][0]["aborted"] == "agent unreachable"


def test_ctrl_c_during_an_eval_writes_the_report_records_the_run_and_exits_130(
    with_sample, register_plugin, todo_pack, tmp_path
):
    class Interrupted(ClaimingPlugin):
        @hookimpl
        def agentpack_evaluate(self, pack, options):
            raise KeyboardInterrupt

    register_plugin(Interrupted(), name="interrupted")
    out, store = tmp_path / "r.json", tmp_path / "runs.sqlite"
    result = run_cli(["eval", str(todo_pack("- [ ] a\n")), "--report", str(out), "--store", str(store)])
    assert result.exit_code == 130 and "interrupted" in result.stderr
    assert "interrupted (Ctrl-C)" in json.loads(out.read_text())["evaluations"][0]["aborted"]
    from agentpack.results.runs import open_store

    with open_store(store) as opened:
        (run,) = opened.find()
    assert run.status == "interrupted"


def _leaf_commands(command, path):
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            yield from _leaf_commands(command.get_command(ctx, name), [*path, name])
    else:
        yield path, command


def test_every_command_of_every_plugin_has_help_with_an_example():
    """-h works on every leaf command, built-in or from a plugin, and its help shows an example."""
    leaves = list(_leaf_commands(cli, []))
    assert len(leaves) > 20
    for path, command in leaves:
        result = run_cli([*path, "-h"])
        assert result.exit_code == 0, (path, result.stderr)
        assert "xample" in (command.help or ""), f"'agentpack {' '.join(path)} -h' shows no example"


def test_quiet_after_the_subcommand_silences_notes(with_sample, todo_pack, tmp_path):
    from agentpack.io import console

    pack = todo_pack("- [x] done\n")
    store = ["--store", tmp_path / "runs.sqlite"]
    loud = run_cli(["eval", pack, *store])
    assert loud.exit_code == 0 and "recorded in" in loud.stderr
    quiet = run_cli(["eval", pack, "-q", *store])
    assert quiet.exit_code == 0 and "recorded in" not in quiet.stderr and console.QUIET
    assert "recorded in" in run_cli(["eval", pack, *store]).stderr and not console.QUIET  # reset per invocation


def test_an_os_error_is_a_one_line_error_not_an_internal_error(register_plugin, monkeypatch):
    from agentpack.kernel.registry import CommandSpec

    @click.command(name="denied")
    def denied() -> None:
        raise PermissionError(13, "Permission denied", "/srv/packs")

    class Plugin:
        @hookimpl
        def agentpack_register_commands(self, register):
            register(CommandSpec(name="denied", target=denied))

    register_plugin(Plugin())
    result = run_cli(["denied"])
    assert result.exit_code == 2 and result.stderr == "error: /srv/packs: Permission denied\n"
    monkeypatch.setenv("AGENTPACK_DEBUG", "1")
    assert "Traceback" in run_cli(["denied"]).stderr


@pytest.mark.parametrize(
    "args",
    [["validate", ".", "--json", "--bogus"], ["validate", "-o", "json", "--bogus", "."], ["validate", "--json", "-o"]],
)
def test_a_usage_error_under_json_is_the_envelope_on_stdout(args):
    result = run_cli(args)
    assert result.exit_code == 2
    envelope = json.loads(result.stdout)
    assert envelope["ok"] is False and envelope["schema_version"] == 1
    assert "--bogus" in envelope["error"]["message"] or "requires an argument" in envelope["error"]["message"]
    assert "Usage:" in result.stderr or "Error:" in result.stderr


def test_a_usage_error_without_json_leaves_stdout_empty():
    result = run_cli(["validate", ".", "--bogus"])
    assert result.exit_code == 2 and result.stdout == "" and "--bogus" in result.stderr
