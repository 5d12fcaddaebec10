"""JUnit XML: one testsuite per validated path or evaluation suite, one testcase per finding or case."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from agentpack.kernel.models import Report

_NOT_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_safe(root: ET.Element) -> None:
    """Spell out characters XML 1.0 cannot hold (ANSI escapes, NUL, ...) as ``\\xNN``, in place."""

    def fix(text: str) -> str:
        return _NOT_XML.sub(lambda m: f"\\x{ord(m[0]):02x}", text)

    for element in root.iter():
        if element.text:
            element.text = fix(element.text)
        for key, value in element.attrib.items():
            element.attrib[key] = fix(value)


def render(report: Report) -> str:
    root = ET.Element("testsuites", name=f"agentpack {report.command}")
    total = failures = errors = 0
    for item in report.items:
        errs = [f for f in item.findings if f.severity == "error"]
        suite = ET.SubElement(
            root, "testsuite", name=item.path, tests=str(max(1, len(errs))), failures=str(len(errs)), errors="0"
        )
        if not errs:
            ET.SubElement(suite, "testcase", classname=item.path, name="valid")
        for f in errs:
            case = ET.SubElement(suite, "testcase", classname=item.path, name=f"{f.code} {f.location()}".strip())
            fail = ET.SubElement(case, "failure", message=f.message, type=f.code)
            fail.text = f"{f.location()}: {f.message}" + (f"\nhint: {f.hint}" if f.hint else "")
        total += max(1, len(errs))
        failures += len(errs)
    for ev in report.evaluations:
        for s in ev.suites:
            t = s.totals
            suite = ET.SubElement(
                root,
                "testsuite",
                name=f"{ev.name}.{s.id}",
                tests=str(t.total),
                failures=str(t.failed),
                errors=str(t.errors),
                skipped=str(t.skipped),
                time=f"{s.duration_s:.3f}",
            )
            for c in s.cases:
                case = ET.SubElement(
                    suite, "testcase", classname=f"{ev.name}.{s.id}", name=c.id, time=f"{c.duration_s:.3f}"
                )
                failed = [a for a in c.assertions if not a.passed]
                body = "\n".join(f"{a.name}: {a.message} (expected {a.expected!r}, got {a.actual!r})" for a in failed)
                if c.status == "failed":
                    ET.SubElement(case, "failure", message=c.message or "assertions failed").text = body or c.message
                elif c.status == "error":
                    ET.SubElement(case, "error", message=c.message or "error").text = body or c.message
                elif c.status == "skipped":
                    ET.SubElement(case, "skipped", message=c.message)
            total += t.total
            failures += t.failed
            errors += t.errors
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", str(errors))
    _xml_safe(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
