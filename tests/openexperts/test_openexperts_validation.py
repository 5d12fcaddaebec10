"""Validation: a mutation corpus (one broken package per rule), the reference package, strict mode."""

from pathlib import Path

import pytest

from agentpack.testing import run_cli


def findings(host, path):
    return host.validate(host.load(path, "openexperts"))


def _set(key, value):
    def change(data):
        data[key] = value

    return change


def _trigger(index, **values):
    def change(data):
        for key, value in values.items():
            if value is None:
                data["triggers"][index].pop(key, None)
            else:
                data["triggers"][index][key] = value

    return change


def _rm(path):
    return lambda root, ey, ef: (root / path).unlink()


def manifest(change):
    return lambda root, ey, ef: ey(root / "expert.yaml", change)


def front(rel, change):
    return lambda root, ey, ef: ef(root / rel, change)


def tool_yaml(rel, change):
    return lambda root, ey, ef: ey(root / rel, change)


def write(rel, text):
    return lambda root, ey, ef: (root / rel).write_text(text)


# (id, mutation, expected code, expected severity)
MUTATIONS = [
    ("no-manifest", _rm("expert.yaml"), "OEX001", "error"),
    ("manifest-syntax", write("expert.yaml", "spec: '1.0'\nname: [unclosed\n"), "OEX002", "error"),
    ("manifest-not-mapping", write("expert.yaml", "- a\n- b\n"), "OEX003", "error"),
    ("missing-name", manifest(lambda d: d.pop("name")), "OEX100", "error"),
    ("missing-description", manifest(lambda d: d.pop("description")), "OEX100", "error"),
    ("missing-version", manifest(lambda d: d.pop("version")), "OEX100", "error"),
    ("missing-components", manifest(lambda d: d.pop("components")), "OEX100", "error"),
    ("bad-concurrency-enum", manifest(lambda d: d["concurrency"].update(default="sometimes")), "OEX100", "error"),
    (
        "bad-tier",
        manifest(lambda d: d["policy"]["approval"]["overrides"].update({"crm.get_customer": "yes"})),
        "OEX100",
        "error",
    ),
    ("bad-trigger-type", manifest(_trigger(0, type="email")), "OEX100", "error"),
    ("unknown-top-key", manifest(_set("learning", {"enabled": True})), "OEX102", "warning"),
    ("unknown-requires-key", manifest(lambda d: d["requires"].update(credentials=["x"])), "OEX104", "info"),
    ("duplicate-required-tool", manifest(lambda d: d["requires"]["tools"].append("crm")), "OEX105", "warning"),
    ("no-orchestrator", manifest(lambda d: d["components"].pop("orchestrator")), "OEX110", "error"),
    ("no-persona", manifest(lambda d: d["components"].update(persona=[])), "OEX111", "error"),
    ("no-functions", manifest(lambda d: d["components"].update(functions=[])), "OEX112", "error"),
    ("component-missing", _rm("functions/draft-reply.md"), "OEX120", "error"),
    ("orchestrator-missing", _rm("orchestrator.md"), "OEX120", "error"),
    ("component-escapes", manifest(lambda d: d["components"]["knowledge"].append("../outside.md")), "OEX121", "error"),
    ("component-absolute", manifest(lambda d: d["components"]["knowledge"].append("/etc/passwd")), "OEX121", "error"),
    (
        "component-twice",
        manifest(lambda d: d["components"]["functions"].append("functions/draft-reply.md")),
        "OEX124",
        "warning",
    ),
    ("no-readme", _rm("README.md"), "OEX130", "warning"),
    ("newer-minor-spec", manifest(_set("spec", "1.3")), "OEX131", "warning"),
    ("other-major-spec", manifest(_set("spec", "2.0")), "OEX132", "error"),
    ("spec-not-string", manifest(_set("spec", 1.0)), "OEX133", "warning"),
    ("version-not-semver", manifest(_set("version", "v1")), "OEX134", "info"),
    ("function-no-frontmatter", write("functions/draft-reply.md", "# Draft\n\nNo frontmatter.\n"), "OEX200", "error"),
    ("process-no-frontmatter", write("processes/answer-chat.md", "# Answer\n"), "OEX200", "error"),
    ("frontmatter-syntax", write("functions/draft-reply.md", "---\nname: [x\n---\nbody\n"), "OEX201", "error"),
    (
        "function-missing-description",
        front("functions/draft-reply.md", lambda d: d.pop("description")),
        "OEX202",
        "error",
    ),
    (
        "process-bad-inputs",
        front("processes/answer-chat.md", lambda d: d.update(inputs="customer_id")),
        "OEX202",
        "error",
    ),
    (  # a type the later checks do not expect: the schema's finding, never a TypeError
        "process-input-name-list",
        front("processes/answer-chat.md", lambda d: d["inputs"][1].update(name=[1, 2])),
        "OEX202",
        "error",
    ),
    ("function-unknown-key", front("functions/draft-reply.md", lambda d: d.update(model="gpt")), "OEX203", "warning"),
    (
        "duplicate-function",
        front("functions/draft-reply.md", lambda d: d.update(name="classify-ticket")),
        "OEX204",
        "error",
    ),
    (
        "duplicate-process",
        front("processes/answer-chat.md", lambda d: d.update(name="daily-digest")),
        "OEX205",
        "error",
    ),
    ("duplicate-trigger", manifest(_trigger(2, name="new_ticket")), "OEX206", "error"),
    ("duplicate-tool", tool_yaml("tools/crm.yaml", lambda d: d.update(name="helpdesk")), "OEX207", "error"),
    (
        "empty-function-body",
        write("functions/summarise-queue.md", "---\nname: summarise-queue\ndescription: x\n---\n"),
        "OEX208",
        "warning",
    ),
    ("not-kebab", front("functions/summarise-queue.md", lambda d: d.update(name="Summarise_Queue")), "OEX212", "info"),
    ("tool-yaml-syntax", write("tools/crm.yaml", "name: crm\noperations: [\n"), "OEX220", "error"),
    ("tool-missing-operations", tool_yaml("tools/crm.yaml", lambda d: d.pop("operations")), "OEX221", "error"),
    (
        "tool-bad-approval",
        tool_yaml("tools/crm.yaml", lambda d: d["operations"][0].update(approval="maybe")),
        "OEX221",
        "error",
    ),
    (
        "duplicate-operation",
        tool_yaml("tools/crm.yaml", lambda d: d["operations"].append(d["operations"][0])),
        "OEX222",
        "error",
    ),
    (
        "tool-not-required",
        lambda root, ey, ef: (
            (root / "tools" / "billing.yaml").write_text("name: billing\noperations:\n  - name: refund\n"),
            ey(root / "expert.yaml", lambda d: d["components"]["tools"].append("tools/billing.yaml")),
        ),
        "OEX223",
        "warning",
    ),
    ("knowledge-bad-type", front("knowledge/incident-status.md", lambda d: d.update(type="secret")), "OEX231", "error"),
    ("state-bad-scope", front("state/queue.md", lambda d: d.update(scope="forever")), "OEX241", "error"),
    ("trigger-unknown-process", manifest(_trigger(0, process="no-such-process")), "OEX300", "error"),
    (
        "process-unknown-trigger",
        front("processes/answer-chat.md", lambda d: d.update(trigger="sms")),
        "OEX301",
        "warning",
    ),
    ("bad-cron", manifest(_trigger(1, expr="61 * * * *")), "OEX302", "error"),
    ("cron-without-expr", manifest(_trigger(1, expr=None)), "OEX303", "error"),
    ("bad-timezone", manifest(_trigger(1, tz="Mars/Olympus_Mons")), "OEX304", "error"),
    ("expr-on-webhook", manifest(_trigger(0, expr="0 * * * *")), "OEX305", "warning"),
    (
        "serial-per-key-without-key",
        manifest(lambda d: (d["concurrency"].pop("key"), d["triggers"][2].pop("concurrency_key"))),
        "OEX306",
        "error",
    ),
    ("mapping-unknown-input", manifest(_trigger(0, payload_mapping={"ticket": "ticket.id"})), "OEX307", "warning"),
    ("bad-path-syntax", manifest(_trigger(0, dedupe_key="ticket..id")), "OEX308", "error"),
    ("bad-mapping-path", manifest(_trigger(0, payload_mapping={"ticket_id": "ticket[x]"})), "OEX308", "error"),
    ("requires-tool-undeclared", manifest(_trigger(0, requires_tool="zendesk")), "OEX309", "warning"),
    (
        "process-trigger-mismatch",
        front("processes/answer-chat.md", lambda d: d.update(trigger="new_ticket")),
        "OEX310",
        "warning",
    ),
    ("unknown-preset", manifest(_trigger(0, preset="outlook")), "OEX311", "warning"),
    (
        "process-unknown-function",
        front("processes/daily-digest.md", lambda d: d.update(functions=["nope"])),
        "OEX400",
        "warning",
    ),
    (
        "function-undeclared-tool",
        front("functions/draft-reply.md", lambda d: d.update(tools=["helpdesk", "slack"])),
        "OEX401",
        "error",
    ),
    (
        "process-undeclared-tool",
        front("processes/answer-chat.md", lambda d: d.update(tools=["billing"])),
        "OEX401",
        "error",
    ),
    (
        "function-unknown-knowledge",
        front("functions/draft-reply.md", lambda d: d.update(knowledge=["knowledge/x.md"])),
        "OEX402",
        "warning",
    ),
    (
        "override-malformed",
        manifest(lambda d: d["policy"]["approval"]["overrides"].update({"send_email": "auto"})),
        "OEX403",
        "warning",
    ),
    (
        "override-unknown-tool",
        manifest(lambda d: d["policy"]["approval"]["overrides"].update({"slack.post": "auto"})),
        "OEX404",
        "warning",
    ),
    (
        "override-unknown-op",
        manifest(lambda d: d["policy"]["approval"]["overrides"].update({"crm.delete": "auto"})),
        "OEX405",
        "warning",
    ),
    (
        "context-not-component",
        front("processes/daily-digest.md", lambda d: d.update(context=["state/other.md"])),
        "OEX406",
        "warning",
    ),
    ("required-tool-without-yaml", manifest(lambda d: d["requires"]["tools"].append("calendar")), "OEX407", "info"),
    (
        "knowledge-escapes",
        front("functions/draft-reply.md", lambda d: d.update(knowledge=["../secrets.md"])),
        "OEX408",
        "error",
    ),
    (
        "scratchpad-escapes",
        front("processes/triage-ticket.md", lambda d: d.update(scratchpad="/tmp/x.md")),
        "OEX408",
        "error",
    ),
    (
        "scratchpad-outside-scratch",
        front("processes/triage-ticket.md", lambda d: d.update(scratchpad="notes/x.md")),
        "OEX409",
        "warning",
    ),
    (
        "scratchpad-unknown-placeholder",
        front("processes/triage-ticket.md", lambda d: d.update(scratchpad="scratch/{thread}.md")),
        "OEX410",
        "warning",
    ),
    ("bad-timeout", manifest(lambda d: d["execution"].update(timeout="five minutes")), "OEX500", "error"),
    (
        "bad-process-sla",
        front("processes/answer-chat.md", lambda d: d["delivery"].update(sla="1 min")),
        "OEX500",
        "error",
    ),
    ("bad-approval-timeout", manifest(lambda d: d["policy"]["approval"].update(timeout="2hours")), "OEX500", "error"),
    (
        "resume-with-idempotent",
        front("processes/daily-digest.md", lambda d: d["execution"].update(idempotent=True)),
        "OEX501",
        "error",
    ),
    (
        "retry-without-protection",
        manifest(lambda d: d["execution"].update(resume_from_execution_log=False)),
        "OEX502",
        "warning",
    ),
    (
        "no-execution-policy",
        lambda root, ey, ef: (
            ey(root / "expert.yaml", lambda d: d.pop("execution")),
            [
                ef(root / p, lambda f: f.pop("execution", None))
                for p in ("processes/daily-digest.md", "processes/answer-chat.md")
            ],
        ),
        "OEX503",
        "info",
    ),
    ("unknown-channel", manifest(lambda d: d["delivery"].update(channel="slack")), "OEX510", "error"),
    (
        "unknown-process-channel",
        front("processes/answer-chat.md", lambda d: d["delivery"].update(channel="email")),
        "OEX510",
        "error",
    ),
    (
        "unknown-escalation-channel",
        manifest(lambda d: d["policy"]["escalation"].update(channel="pager")),
        "OEX510",
        "error",
    ),
    (
        "sla-breach-without-sla",
        front("processes/daily-digest.md", lambda d: d["delivery"].update(sla_breach="warn")),
        "OEX511",
        "info",
    ),
    ("no-policy", manifest(lambda d: d.pop("policy")), "OEX600", "info"),
]


def test_the_example_is_clean(agentpack_host, acme):
    assert findings(agentpack_host, acme) == []


@pytest.mark.parametrize("case", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_mutation(case, agentpack_host, acme, edit_yaml, edit_front):
    name, mutate, code, severity = case
    mutate(acme, edit_yaml, edit_front)
    found = findings(agentpack_host, acme)
    matching = [f for f in found if f.code == code]
    assert matching, f"{name}: expected {code}, got {[(f.code, f.message) for f in found]}"
    assert {f.severity for f in matching} == {severity}, matching
    for finding in matching:
        assert finding.file, finding
        if finding.code not in ("OEX130",):
            assert finding.line is not None, finding
    errors = [f for f in found if f.severity == "error"]
    assert bool(errors) == (severity == "error"), f"{name}: unexpected errors {errors}"


def test_resumable_process_needs_a_checklist(agentpack_host, acme, edit_front):
    path = acme / "processes" / "answer-chat.md"
    text = path.read_text().replace("- [ ] ", "1. ")
    path.write_text(text)
    edit_front(path, lambda d: d.update(scratchpad="scratch/chat-{customer_id}.md"))
    codes = [f.code for f in findings(agentpack_host, acme)]
    assert codes == ["OEX209"]


def test_every_rule_code_is_documented():
    import re

    docs = (Path(__file__).parents[2] / "docs" / "openexperts.md").read_text()
    source = "".join(
        p.read_text()
        for p in (Path(__file__).parents[2] / "plugins" / "openexperts" / "agentpack_openexperts").glob("*.py")
    )
    codes = sorted(set(re.findall(r'"(OEX\d{3})"', source)))
    assert len(codes) > 50
    missing = [c for c in codes if f"`{c}`" not in docs]
    assert missing == []


def test_finding_points_at_the_line_and_field(agentpack_host, acme, edit_yaml):
    edit_yaml(acme / "expert.yaml", _trigger(1, tz="Mars/Base"))
    finding = next(f for f in findings(agentpack_host, acme) if f.code == "OEX304")
    lines = (acme / "expert.yaml").read_text().splitlines()
    assert "Mars/Base" in lines[finding.line - 1]
    assert finding.pointer == "/triggers/1/tz"
    assert finding.file.endswith("expert.yaml")


def test_unknown_keys_are_errors_in_strict_mode(agentpack_host, acme, edit_yaml):
    edit_yaml(acme / "expert.yaml", _set("learning", {"enabled": True}))
    pack = agentpack_host.load(acme)
    assert {f.severity for f in agentpack_host.validate(pack) if f.code == "OEX102"} == {"warning"}
    assert {f.severity for f in agentpack_host.validate(pack, strict=True) if f.code == "OEX102"} == {"error"}


def test_reference_package(agentpack_host, reference_pack):
    found = findings(agentpack_host, reference_pack)
    assert [f for f in found if f.severity == "error"] == []
    codes = {f.code for f in found}
    assert {"OEX130", "OEX102"} <= codes  # no README.md; the later 'learning:' key
    learning = next(f for f in found if f.code == "OEX102")
    assert learning.pointer == "/learning" and learning.line is not None


def test_reference_package_through_the_cli(reference_pack):
    result = run_cli(["validate", "-o", "json", str(reference_pack)])
    assert result.exit_code == 0, result.stdout + result.stderr
    item = result.json()["items"][0]
    assert item["format"] == "openexperts" and item["ok"] is True


def test_reference_mutations_are_caught(agentpack_host, reference_pack, edit_yaml):
    edit_yaml(reference_pack / "expert.yaml", _trigger(0, process="no-such"))
    codes = {f.code for f in findings(agentpack_host, reference_pack) if f.severity == "error"}
    assert codes == {"OEX300"}


def test_cli_exit_code_for_a_broken_package(acme, edit_yaml):
    edit_yaml(acme / "expert.yaml", _trigger(1, expr="not cron"))
    result = run_cli(["validate", str(acme)])
    assert result.exit_code == 1
    assert "OEX302" in result.stdout and "expert.yaml:" in result.stdout
