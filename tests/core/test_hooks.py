"""One test per hook, driven through the host facade with the sample plugin registered."""

import pluggy
import pytest

from agentpack import hookimpl
from agentpack.io.errors import PluginError
from agentpack.kernel.models import EvalOptions
from agentpack.kernel.packtypes import QueryRequest
from agentpack.kernel.registry import McpContext


def test_agentpack_register_formats(agentpack_host, register_plugin, sample_plugin):
    register_plugin(sample_plugin, name="sample")
    info = agentpack_host.formats()["sample-todo"]
    assert info.plugin == "sample" and info.title == "To-do list"


def test_agentpack_detect(agentpack_host, register_plugin, sample_plugin, todo_pack):
    register_plugin(sample_plugin, name="sample")
    detection = agentpack_host.detect(todo_pack("- [ ] a\n"))
    assert detection.format == "sample-todo" and detection.confidence == 0.9


def test_agentpack_load(agentpack_host, register_plugin, sample_plugin, todo_pack):
    register_plugin(sample_plugin, name="sample")
    pack = agentpack_host.load(todo_pack("- [ ] a\n", name="mine"))
    assert (pack.format, pack.name) == ("sample-todo", "mine")


def test_agentpack_validate(agentpack_host, register_plugin, sample_plugin, todo_pack):
    register_plugin(sample_plugin, name="sample")
    pack = agentpack_host.load(todo_pack("- [ ] okay\nnot an item\n- [x] ab\n"))
    findings = agentpack_host.validate(pack)
    assert [(f.code, f.line) for f in findings] == [("TODO001", 2)]
    strict = agentpack_host.validate(pack, strict=True)
    assert [(f.code, f.line) for f in strict] == [("TODO001", 2), ("TODO002", 3)]


def test_agentpack_validate_gathers_every_plugin(agentpack_host, register_plugin, sample_plugin, todo_pack):
    class Extra:
        @hookimpl
        def agentpack_validate(self, pack, strict):
            from agentpack.kernel.models import Finding

            return [Finding.info("EXTRA1", "seen by another plugin", file="x")]

    register_plugin(sample_plugin, name="sample")
    register_plugin(Extra(), name="extra")
    codes = {f.code for f in agentpack_host.validate(agentpack_host.load(todo_pack("oops\n")))}
    assert codes == {"TODO001", "EXTRA1"}


def test_agentpack_query(agentpack_host, register_plugin, sample_plugin, todo_pack):
    register_plugin(sample_plugin, name="sample")
    pack = agentpack_host.load(todo_pack("- [ ] buy milk\n- [x] walk dog\n"))
    response = agentpack_host.query(pack, QueryRequest(question="milk please"))
    assert response.answer == "buy milk"
    assert response.citations[0].label == "todo.txt#L1"


def test_agentpack_evaluate(agentpack_host, register_plugin, sample_plugin, todo_pack):
    register_plugin(sample_plugin, name="sample")
    report = agentpack_host.evaluate(agentpack_host.load(todo_pack("- [ ] a\n- [x] b\n")), EvalOptions())
    assert (report.totals.passed, report.totals.failed) == (1, 1)
    assert not report.ok


def test_agentpack_register_reporters(agentpack_host, register_plugin, sample_plugin):
    register_plugin(sample_plugin, name="sample")
    assert {"text", "json", "junit", "sarif", "github", "html", "count"} <= set(agentpack_host.reporters())
    assert agentpack_host.reporter("count").plugin == "sample"


def test_agentpack_register_commands(agentpack_host, register_plugin, sample_plugin):
    register_plugin(sample_plugin, name="sample")
    spec = agentpack_host.commands()["todo-stats"]
    assert spec.load().name == "stats"


def test_agentpack_register_mcp_tools(agentpack_host, register_plugin, sample_plugin, todo_pack):
    register_plugin(sample_plugin, name="sample")
    tools = agentpack_host.mcp_tools(McpContext())
    tool = tools["sample.count_todos"]
    assert tool.handler({"path": str(todo_pack("- [x] a\n- [ ] b\n- [ ] c\n"))}) == {"done": 1, "open": 2}


def test_agentpack_register_mcp_content(agentpack_host, register_plugin, sample_plugin, todo_pack):
    from agentpack.kernel.registry import McpContent, McpPrompt, McpResource, SkillTree

    class Publishing:
        @hookimpl
        def agentpack_register_mcp_content(self, register, context, host):
            files = {"tidy/SKILL.md": b"---\nname: tidy\ndescription: Tidy the list.\n---\nTidy it.\n"}
            register(
                McpContent(
                    name="todo",
                    covers=tuple(context.packs),
                    skills=(SkillTree(prefix="todo", files=files),),
                    resources=(McpResource("todo://list", "list", lambda: b"- [ ] a\n"),),
                    prompts=(McpPrompt("plan", "Plan the day.", lambda arguments: "Plan."),),
                )
            )

    register_plugin(sample_plugin, name="sample")
    register_plugin(Publishing(), name="publishing")
    content = agentpack_host.mcp_content(McpContext())
    assert content["todo"].plugin == "publishing" and content["todo"].resources[0].read() == b"- [ ] a\n"
    # with packs named, only the owners of their formats publish (as for tools)
    assert agentpack_host.mcp_content(McpContext(packs=[todo_pack("- [ ] a\n")])) == {}


def test_agentpack_register_run_exporters(agentpack_host, register_plugin, sample_plugin):
    register_plugin(sample_plugin, name="sample")
    exporters = agentpack_host.run_exporters()
    assert {"jsonl", "csv", "todo-lines"} <= set(exporters)
    assert exporters["todo-lines"].plugin == "sample" and exporters["jsonl"].plugin == "agentpack.results.runs.plugin"


def test_agentpack_register_run_views(agentpack_host, register_plugin, sample_plugin):
    from agentpack.kernel.runtypes import Case, Run

    register_plugin(sample_plugin, name="sample")
    view = agentpack_host.run_views()["todo-open"]
    run = Run(id=1, uid="u", command="eval", input="p", status="failed", started_at="", format="sample-todo")
    run.cases = [Case(suite="todo", id="L1", status="failed", name="milk <b>")]
    assert view.formats == ("sample-todo",)
    assert view.render(run) == '<p class="todo-open">1 open: milk &lt;b&gt;</p>'


def test_agentpack_add_hookspecs(agentpack_host, register_plugin):
    class Spec:
        @pluggy.HookspecMarker("agentpack")
        def agentpack_sample_greeting(self, name):
            """A plugin's own hook."""

    class Owner:
        @hookimpl
        def agentpack_add_hookspecs(self, pluginmanager):
            pluginmanager.add_hookspecs(Spec)

    class Implementer:
        @hookimpl
        def agentpack_sample_greeting(self, name):
            return f"hello {name}"

    from agentpack.kernel.plugins import create_plugin_manager

    pm = create_plugin_manager(load_entrypoints=False, plugins=(Owner(), Implementer()))
    assert pm.hook.agentpack_sample_greeting(name="x") == ["hello x"]


def test_plugins_collect_their_own_registration_hooks():
    from dataclasses import dataclass

    from agentpack.kernel.host import collect_registrations
    from agentpack.kernel.plugins import create_plugin_manager

    @dataclass(frozen=True)
    class Widget:
        name: str
        plugin: str | None = None

    class Spec:
        @pluggy.HookspecMarker("agentpack")
        def agentpack_sample_register_widgets(self, register):
            """A plugin's own registration hook."""

    class Owner:
        @hookimpl
        def agentpack_add_hookspecs(self, pluginmanager):
            pluginmanager.add_hookspecs(Spec)

        @hookimpl
        def agentpack_sample_register_widgets(self, register):
            register(Widget("dial"))

    class Other:
        @hookimpl
        def agentpack_sample_register_widgets(self, register):
            register(Widget("dial"))

    owner = Owner()
    pm = create_plugin_manager(load_entrypoints=False, plugins=(owner,))
    assert collect_registrations(pm, "agentpack_sample_register_widgets", "widget")["dial"].plugin
    assert collect_registrations(pm, "agentpack_no_such_hook", "widget") == {}
    pm.register(Other(), name="other")
    with pytest.raises(PluginError, match=r"widget 'dial' is registered by both plugin .* and plugin"):
        collect_registrations(pm, "agentpack_sample_register_widgets", "widget")


def test_duplicate_format_names_both_plugins(agentpack_host, register_plugin, sample_plugin):
    class Clash:
        @hookimpl
        def agentpack_register_formats(self, register):
            from agentpack.kernel.registry import FormatInfo

            register(FormatInfo(name="sample-todo", title="clash"))

    register_plugin(sample_plugin, name="sample")
    register_plugin(Clash(), name="clash")
    with pytest.raises(PluginError) as exc:
        agentpack_host.formats()
    assert "'sample'" in str(exc.value) and "'clash'" in str(exc.value)


def test_unknown_hook_fails_loudly():
    from agentpack.kernel.plugins import create_plugin_manager

    class Typo:
        @hookimpl
        def agentpack_valdiate(self, pack, strict):
            return []

    with pytest.raises(PluginError, match="unknown hook"):
        create_plugin_manager(load_entrypoints=False, plugins=(Typo(),))


def test_a_crashing_mcp_registration_skips_only_that_plugin(agentpack_host, register_plugin, sample_plugin, capsys):
    class Broken:
        @hookimpl
        def agentpack_register_mcp_tools(self, register, context):
            raise NameError("tree_skill_dirs")

    register_plugin(sample_plugin, name="sample")
    register_plugin(Broken(), name="broken")
    tools = agentpack_host.mcp_tools(McpContext())
    assert "sample.count_todos" in tools
    assert "plugin 'broken' registered no MCP tools" in capsys.readouterr().err
