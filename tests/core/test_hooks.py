"""One test per hook, driven through the host facade with the sample plugin registered."""

import pluggy
import pytest

from agentpack import hookimpl
from agentpack.io.errors import PackError, PluginError
from agentpack.kernel.host import HookResultError
from agentpack.kernel.models import EvalOptions
from agentpack.kernel.packtypes import Detection, QueryRequest
from agentpack.kernel.registry import FormatInfo, McpContext


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


def test_agentpack_validate_reaches_only_the_owner(agentpack_host, register_plugin, sample_plugin, todo_pack):
    """A plugin that forgets a ``pack.format`` guard in agentpack_validate never sees other formats' packs."""
    seen = []

    class Careless:
        @hookimpl
        def agentpack_register_formats(self, register):
            register(FormatInfo(name="careless", title="Careless", description="x"))

        @hookimpl
        def agentpack_validate(self, pack, strict):
            seen.append(pack.format)
            return pack.data["no such key"]  # would crash on any pack but its own

    register_plugin(sample_plugin, name="sample")
    register_plugin(Careless(), name="careless")
    assert [f.code for f in agentpack_host.validate(agentpack_host.load(todo_pack("oops\n")))] == ["TODO001"]
    assert seen == []


def test_agentpack_check(agentpack_host, register_plugin, sample_plugin, todo_pack):
    """Cross-cutting checks are gathered from every plugin for packs of every format."""

    class Extra:
        @hookimpl
        def agentpack_check(self, pack, strict):
            from agentpack.kernel.models import Finding

            return [Finding.info("EXTRA1", f"seen by another plugin (strict={strict})", file="x")]

    register_plugin(sample_plugin, name="sample")
    register_plugin(Extra(), name="extra")
    findings = agentpack_host.validate(agentpack_host.load(todo_pack("oops\n")), strict=True)
    assert [(f.code, f.message) for f in findings if f.code != "TODO001"] == [
        ("EXTRA1", "seen by another plugin (strict=True)")
    ]
    assert "TODO001" in {f.code for f in findings}


@pytest.mark.parametrize(
    "returned",
    [{"not": "a list"}, ["a string"], "text"],
    ids=["mapping", "list of strings", "string"],
)
def test_a_wrong_hook_result_names_the_plugin(agentpack_host, register_plugin, sample_plugin, todo_pack, returned):
    from agentpack.kernel.host import HookResultError

    class Sloppy:
        @hookimpl
        def agentpack_check(self, pack, strict):
            return returned

    register_plugin(sample_plugin, name="sample")
    register_plugin(Sloppy(), name="sloppy")
    with pytest.raises(HookResultError, match=r"plugin .sloppy. returned .* from agentpack_check, expected a list"):
        agentpack_host.validate(agentpack_host.load(todo_pack("- [ ] a\n")))


def test_a_wrong_query_or_load_result_names_the_owner(agentpack_host, register_plugin, sample_plugin, todo_pack):
    from agentpack.kernel.host import HookResultError

    class Owner:
        @hookimpl
        def agentpack_register_formats(self, register):
            register(FormatInfo(name="odd", title="Odd", description="x"))

        @hookimpl
        def agentpack_detect(self, path):
            return Detection(format="odd", confidence=1.0) if path.name == "odd" else None

        @hookimpl
        def agentpack_load(self, path, format):
            return {"path": str(path)}

    register_plugin(Owner(), name="owner")
    odd = todo_pack("- [ ] a\n").parent / "odd"
    odd.mkdir()
    with pytest.raises(HookResultError, match="plugin 'owner' returned dict from agentpack_load, expected Pack"):
        agentpack_host.load(odd)


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


class Doubler:
    """A format whose pack doubles a number: owner of ``NAME`` packs (a folder with ``NAME.txt``)."""

    def __init__(self, name="doubler"):
        self.name = name

    @hookimpl
    def agentpack_register_formats(self, register):
        from agentpack.kernel.registry import FormatInfo

        register(FormatInfo(name=self.name, title="Doubler"))

    @hookimpl
    def agentpack_detect(self, path):
        from agentpack.kernel.packtypes import Detection

        return Detection(format=self.name, confidence=1.0) if (path / f"{self.name}.txt").is_file() else None

    @hookimpl
    def agentpack_load(self, path, format):
        from agentpack.kernel.packtypes import Pack

        return Pack(path=path, root=path, format=format)

    @hookimpl
    def agentpack_invoke(self, pack, request, host):
        from agentpack.kernel.invocation import InvokeError, InvokeResult

        assert host is not None
        if not isinstance(request.input, int):
            error = InvokeError("not_a_number", "expected an integer", side="input", pointer="")
            return InvokeResult("invalid_input", errors=[error])
        return InvokeResult("ok", output=request.input * 2, report={"options": request.options})


def test_agentpack_invoke(agentpack_host, register_plugin, sample_plugin, todo_pack, tmp_path):
    from agentpack.kernel.invocation import InvokeRequest

    register_plugin(sample_plugin, name="sample")
    register_plugin(Doubler(), name="doubler")
    (tmp_path / "doubler.txt").write_text("")
    pack = agentpack_host.load(tmp_path)
    result = agentpack_host.invoke(pack, InvokeRequest(21, options={"k": "v"}))
    assert (result.ok, result.output, result.errors, result.report) == (True, 42, [], {"options": {"k": "v"}})
    failed = agentpack_host.invoke(pack, InvokeRequest("x"))
    assert not failed.ok and failed.output is None
    assert failed.summary() == "invalid_input: not_a_number at input: expected an integer"
    with pytest.raises(PackError, match="format 'sample-todo' packs cannot be invoked"):
        agentpack_host.invoke(agentpack_host.load(todo_pack("- [ ] a\n")), InvokeRequest(1))


def test_agentpack_invoke_reaches_only_the_owner_and_checks_its_answer(agentpack_host, register_plugin, tmp_path):
    from agentpack.kernel.invocation import InvokeRequest

    class Intruder:
        @hookimpl
        def agentpack_invoke(self, pack, request):
            raise AssertionError("a plugin saw another format's pack")

    class Sloppy(Doubler):
        @hookimpl
        def agentpack_invoke(self, pack, request, host):
            return {"status": "ok"}

    register_plugin(Intruder(), name="intruder")
    register_plugin(Doubler(), name="doubler")
    register_plugin(Sloppy("sloppy"), name="sloppy")
    for name in ("doubler", "sloppy"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.txt").write_text("")
    assert agentpack_host.invoke(agentpack_host.load(tmp_path / "doubler"), InvokeRequest(2)).output == 4
    with pytest.raises(HookResultError, match="'sloppy' returned dict from agentpack_invoke, expected InvokeResult"):
        agentpack_host.invoke(agentpack_host.load(tmp_path / "sloppy"), InvokeRequest(2))


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
    tool = tools["sample_count_todos"]
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
    assert "sample_count_todos" in tools
    assert "plugin 'broken' registered no MCP tools" in capsys.readouterr().err


def test_agentpack_register_schemas(agentpack_host, register_plugin, tmp_path):
    from agentpack.io.errors import PluginError
    from agentpack.kernel.registry import SchemaInfo, register_schema_folder

    (tmp_path / "thing.schema.json").write_text('{"title": "A thing", "type": "object"}')
    (tmp_path / "notes.txt").write_text("not a schema")

    class Schemas:
        @hookimpl
        def agentpack_register_schemas(self, register):
            register_schema_folder(register, tmp_path, "mine")

    register_plugin(Schemas(), name="mine")
    found = agentpack_host.schemas()
    assert found["mine/thing"] == SchemaInfo("mine/thing", tmp_path / "thing.schema.json", "A thing", "mine")
    assert {"ecp/ecp-manifest", "agentpack/report.v1"} <= set(found)

    class Twin:
        @hookimpl
        def agentpack_register_schemas(self, register):
            register(SchemaInfo("mine/thing", tmp_path / "thing.schema.json"))

    register_plugin(Twin(), name="twin")
    with pytest.raises(PluginError, match="schema 'mine/thing' is registered by both"):
        agentpack_host.schemas()


def test_agentpack_register_scaffolds(agentpack_host, register_plugin):
    from agentpack.io.errors import PluginError
    from agentpack.kernel.registry import ScaffoldInfo

    class Scaffolds:
        @hookimpl
        def agentpack_register_scaffolds(self, register):
            register(ScaffoldInfo("thing", ("thing", "init"), "a thing"))

    register_plugin(Scaffolds(), name="mine")
    found = agentpack_host.scaffolds()
    assert found["thing"] == ScaffoldInfo("thing", ("thing", "init"), "a thing", "mine")
    assert found["skill"].command == ("skill-md", "new") and found["ecp"].plugin == "ecp"

    class Twin:
        @hookimpl
        def agentpack_register_scaffolds(self, register):
            register(ScaffoldInfo("thing", ("other", "init")))

    register_plugin(Twin(), name="twin")
    with pytest.raises(PluginError, match="scaffold 'thing' is registered by both"):
        agentpack_host.scaffolds()
