"""CLI building blocks shared by the core and every plugin command.

One way to do each job on the command line: context settings, exit codes, the
``-o/--output`` option (``--json`` as its alias), ``KEY=VALUE`` options, the
versioned JSON envelope, and writing a report file whose format follows its
suffix (the registered ``Reporter.suffix``). Plugin command groups use these
instead of their own copies, so every command looks and fails the same way.

Light on purpose: importing it costs click only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from agentpack.io.envelope import SCHEMA_VERSION, envelope, write_chunks
from agentpack.kernel.registry import Recording

if TYPE_CHECKING:
    from agentpack.kernel.host import Host
    from agentpack.kernel.lazyreport import LazyReport
    from agentpack.kernel.models import Report
    from agentpack.kernel.registry import Reporter

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
"""Pass as ``context_settings=`` to every plugin group: ``-h`` and the help width."""

F = TypeVar("F", bound=Callable[..., Any])

_json_command: list[str] = []
"""Commands that asked for JSON output in this process, so an error can be reported as an envelope."""


def host() -> Host:
    """The process-wide plugin host (built on first use)."""
    from agentpack.kernel.plugins import get_host

    return get_host()


def group(**kwargs: Any) -> Callable[[F], click.Group]:
    """``click.group`` with the shared context settings."""
    kwargs.setdefault("context_settings", CONTEXT_SETTINGS)
    decorator: Callable[[F], click.Group] = click.group(**kwargs)
    return decorator


# -- options ---------------------------------------------------------------------------------
def _complete_reporters(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    try:
        return [name for name in sorted(host().reporters()) if name.startswith(incomplete)]
    except Exception:  # completion must never fail the shell
        return []


def output_option(
    default: str = "text",
    *,
    choices: Iterable[str] | None = None,
    command: str | None = None,
    flags: tuple[str, ...] = ("-o", "--output"),
) -> Callable[[F], F]:
    """``-o/--output FORMAT`` with ``--json`` as an alias of ``-o json``.

    The decorated function receives one argument, ``output``, already resolved.
    Without ``choices`` any registered reporter name is accepted (checked when
    the report is rendered). ``command`` names the command in the JSON error
    envelope written when the command fails with ``-o json``. ``flags`` names
    the option for a command whose ``-o`` means something else (``--format``);
    ``--json`` is always there.
    """
    fixed = tuple(choices) if choices is not None else None

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def wrapper(*args: Any, as_json: bool = False, **kwargs: Any) -> Any:
            if as_json:
                kwargs["output"] = "json"
            else:
                kwargs["output"] = _configured_output(kwargs.get("output"), fixed)
            if kwargs.get("output") == "json":
                ctx = click.get_current_context(silent=True)
                _json_command.append(command or (ctx.command_path.removeprefix("agentpack ") if ctx else "agentpack"))
            return f(*args, **kwargs)

        wrapper = click.option("--json", "as_json", is_flag=True, help=f"Alias for {flags[0]} json.")(wrapper)
        option_help = (
            f"Output format: {', '.join(fixed)}."
            if fixed
            else "Output format: text, json, junit, sarif, github, html, or a plugin's."
        )
        return click.option(  # type: ignore[return-value]
            *flags,
            "output",
            default=default,
            show_default=True,
            metavar="FORMAT",
            type=click.Choice(fixed) if fixed else None,
            shell_complete=None if fixed else _complete_reporters,
            help=option_help,
        )(wrapper)

    return decorate


def _configured_output(given: Any, fixed: tuple[str, ...] | None) -> Any:
    """``given``, unless ``-o`` was not on the command line and the project configuration names a default
    the command accepts (docs/configuration.md: flag > env > file > default)."""
    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    if ctx is None or ctx.get_parameter_source("output") is not ParameterSource.DEFAULT:
        return given
    from agentpack.kernel.config import load

    configured = load().output
    return configured if configured and (fixed is None or configured in fixed) else given


def _set_quiet(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from agentpack.io import console

        console.QUIET = True


def _add_verbosity(ctx: click.Context, param: click.Parameter, value: int) -> None:
    if value:
        from agentpack.io import console

        console.verbosity(value, add=True)


_QUIET: dict[str, Any] = {
    "is_flag": True,
    "expose_value": False,
    "is_eager": True,
    "callback": _set_quiet,
    "help": "No progress bars, heartbeats or notes on stderr.",
}
_VERBOSE: dict[str, Any] = {
    "count": True,
    "expose_value": False,
    "callback": _add_verbosity,
    "help": "Log what the command does on stderr (-vv: debug lines too).",
}


def quiet_option() -> Callable[[F], F]:
    """``-q/--quiet``: sets ``console.QUIET`` (no progress, heartbeats or notes); the function receives nothing."""
    return click.option("-q", "--quiet", **_QUIET)


def with_shared_options(command: click.Command) -> click.Command:
    """Give ``command`` and every subcommand under it ``-q/--quiet`` and ``-v/--verbose`` where it has no
    option of that name.

    The ``agentpack`` group applies it to each command it hands out, so ``-q`` means ``--quiet`` and
    ``-v``/``-vv`` mean ``--verbose`` before or after the subcommand's name (the counts add up), for the
    core's commands and every plugin's alike.
    """
    names = {opt for param in command.params for opt in getattr(param, "opts", ())}
    if not names & {"-q", "--quiet"}:
        command.params.append(click.Option(["-q", "--quiet"], **_QUIET))
    if not names & {"-v", "--verbose"}:
        command.params.append(click.Option(["-v", "--verbose"], **_VERBOSE))
    for sub in getattr(command, "commands", {}).values():
        with_shared_options(sub)
    return command


class ReportOption(click.Option):
    """The ``--report FILE`` of ``report_option``: one meaning on every command (the format follows the suffix)."""


def report_option(help_text: str | None = None) -> Callable[[F], F]:
    """``--report FILE``: also write a report; its format follows the file's suffix."""
    return click.option(
        "--report",
        "report_file",
        cls=ReportOption,
        type=click.Path(dir_okay=False, path_type=Path),
        help=help_text or "Also write a report file; its format follows the suffix (.html, .xml, .json, .sarif, .txt).",
    )


def jobs_option(help_text: str = "Work items in parallel.") -> Callable[[F], F]:
    """``-j/--jobs N`` (at least 1)."""
    return click.option("-j", "--jobs", default=1, show_default=True, type=click.IntRange(min=1), help=help_text)


def pairs_option(
    name: str = "--option", dest: str = "options", help_text: str = "KEY=VALUE (repeatable)."
) -> Callable[[F], F]:
    """A repeatable ``KEY=VALUE`` option; the function receives a ``dict[str, str]``."""

    def convert(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
        return parse_pairs(values, name)

    return click.option(name, dest, multiple=True, metavar="KEY=VALUE", callback=convert, help=help_text)


def parse_pairs(values: Iterable[str], what: str) -> dict[str, str]:
    """``["a=1", "b=x=y"]`` -> ``{"a": "1", "b": "x=y"}``; a value without ``=`` is a usage error."""
    result: dict[str, str] = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"'{value}' is not KEY=VALUE", param_hint=what)
        result[key] = val
    return result


def mcp_option() -> Callable[[F], F]:
    """``--mcp LABEL=COMMAND_OR_URL`` (repeatable): MCP servers whose skills the command reads beside local ones.
    The function receives ``mcp``, a list of ``agentpack.mcp.client.ServerSpec``."""

    def convert(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[Any]:
        if not values:  # the usual case imports nothing
            return []
        from agentpack.io.errors import AgentpackError
        from agentpack.mcp.client import parse_servers

        try:
            return parse_servers(values)
        except AgentpackError as exc:
            raise click.BadParameter(exc.message, param_hint="--mcp") from None

    return click.option(
        "--mcp",
        "mcp",
        multiple=True,
        metavar="LABEL=COMMAND_OR_URL",
        callback=convert,
        help="Also read the skills an MCP server serves (Skills extension): a command started over stdio or a "
        "Streamable HTTP URL, named by LABEL in every output (repeatable).",
    )


def record_options() -> Callable[[F], F]:
    """``--store FILE``, ``--no-record`` and ``--tag TAG``: the function receives one ``recording``."""

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def wrapper(
            *args: Any, store: Path | None = None, no_record: bool = False, tags: tuple[str, ...] = (), **kwargs: Any
        ) -> Any:
            kwargs["recording"] = Recording(store=store, enabled=not no_record, tags=tuple(tags))
            return f(*args, **kwargs)

        wrapper = click.option(
            "--tag", "tags", multiple=True, metavar="TAG", help="Tag the recorded run (repeatable)."
        )(wrapper)
        wrapper = click.option("--no-record", is_flag=True, help="Do not record this run in the run store.")(wrapper)
        return click.option(  # type: ignore[return-value]
            "--store",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Record the run in this store (default: $AGENTPACK_RUNS or .agentpack/runs.sqlite).",
        )(wrapper)

    return decorate


# -- output ----------------------------------------------------------------------------------
def print_json(value: Any) -> None:
    """Print a JSON value on stdout (indented, UTF-8, unknown types as strings), written as it is encoded in
    chunks of about 64 KiB: a large value's text is never held whole (``envelope.Streamed`` arrays are made
    as they are written)."""
    write_chunks(value, lambda chunk: click.echo(chunk, nl=False))
    click.echo("")


def emit_json(command: str, ok: bool, **fields: Any) -> None:
    """Print ``envelope(command, ok, **fields)`` on stdout."""
    print_json(envelope(command, ok, **fields))


def reporter_for_suffix(path: Path) -> str:
    """The registered reporter whose ``suffix`` matches ``path`` (``json`` when none does).

    Several reporters may share a suffix (``text`` and ``github`` both write
    ``.txt``): the one whose name is the suffix, then the first registered
    from a built-in, then by name.
    """
    suffix = path.suffix.lower()
    if suffix == ".htm":
        suffix = ".html"
    reporters = host().reporters()
    matches = [r for r in reporters.values() if r.suffix.lower() == suffix]
    if not matches:
        return "json"
    from agentpack.kernel.host import DEFAULT_PLUGINS

    matches.sort(key=lambda r: (r.name != suffix[1:], r.plugin not in DEFAULT_PLUGINS, _builtin_rank(r.name), r.name))
    return matches[0].name


def _builtin_rank(name: str) -> int:
    from agentpack.results.reporters.plugin import BUILTIN

    names = [row[0] for row in BUILTIN]
    return names.index(name) if name in names else len(names)


def _render(report: Report | LazyReport, reporter: Reporter) -> str:
    """``reporter``'s text for ``report``; a ``LazyReport`` becomes a pydantic ``Report`` unless the reporter
    takes it as it is."""
    from agentpack.kernel.lazyreport import LazyReport

    if isinstance(report, LazyReport):
        if reporter.lazy:
            return reporter.render(report)  # type: ignore[arg-type]  # a lazy reporter reads both shapes
        report = report.model()
    from agentpack import __version__

    report.tool.version = __version__
    return reporter.render(report)


def write_report(report: Report | LazyReport, path: Path | str) -> None:
    """Write ``report`` to ``path`` atomically, rendered by the reporter its suffix names."""
    from agentpack.io.fsutil import SHARED, atomic_write_text

    path = Path(path)
    atomic_write_text(path, _render(report, host().reporter(reporter_for_suffix(path))), mode=SHARED)


def emit_report(report: Report | LazyReport, output: str, report_file: Path | str | None = None) -> None:
    """Render ``report`` on stdout with reporter ``output`` (coloured on a terminal where the reporter
    colours), and to ``report_file`` if given."""
    import sys

    from agentpack.io import console

    with console.styling(sys.stdout):  # the text reporter colours PASS/FAIL on a terminal; files stay plain
        text = _render(report, host().reporter(output))
    click.echo(text, nl=False)
    if report_file:
        write_report(report, report_file)


def json_error_command() -> str | None:
    """The command that asked for JSON output, if any (for the error envelope of ``main``)."""
    return _json_command[-1] if _json_command else None


__all__ = [
    "CONTEXT_SETTINGS",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PROBLEMS",
    "EXIT_USAGE",
    "SCHEMA_VERSION",
    "Recording",
    "ReportOption",
    "emit_json",
    "emit_report",
    "envelope",
    "group",
    "host",
    "jobs_option",
    "output_option",
    "pairs_option",
    "parse_pairs",
    "print_json",
    "quiet_option",
    "record_options",
    "report_option",
    "reporter_for_suffix",
    "with_shared_options",
    "write_report",
]
