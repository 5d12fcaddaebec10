"""Every command in README.md and docs/*.md works as written: offline, without API keys, on a copy of
``examples/``.

A command block is a fenced block tagged ``bash``, ``sh``, ``shell`` or ``console`` (whose commands are
the lines after a ``$`` prompt). The blocks of one page run in order, each block as one shell (so a ``cd``
holds for the rest of its block), from a temporary folder of that page's own holding a copy of the
repository's ``examples/``, with this venv's ``agentpack`` first on ``PATH``. Each command must exit 0, or
the code its comment names as ``[exit N]``. Nothing is left out without a stated reason: a block after
``<!-- readme-test: skip (why) -->`` is not run, nor a command whose comment says ``[skip: why]`` (a
server that runs until stopped, a cluster elsewhere). API keys are removed from the environment and
HTTP(S) proxies point at a closed port, so a command that reaches for the network fails instead of
passing by luck.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^```(\w*)\s*$")
COMMAND_LANGUAGES = ("bash", "sh", "shell", "console")
SKIP = re.compile(r"<!--\s*readme-test:\s*skip\s*\((?P<why>[^)]+)\)\s*-->\s*$")
SKIP_COMMAND = re.compile(r"\[skip: (?P<why>[^\]]+)\]")
EXPECT = re.compile(r"\[exit (\d+)\]")
SECRETS = ("OPENAI_API_KEY", "AGENTPACK_AGENT_RPC_JUDGE_API_KEY", "ANTHROPIC_API_KEY")


def command_blocks(text: str) -> list[tuple[int, list[str]]]:
    """``(line, commands)`` of every command block not marked skip; continued lines are joined, and a
    command marked ``[skip: why]`` is left out."""
    blocks: list[tuple[int, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i].strip())
        if fence is None:
            i += 1
            continue
        language = fence.group(1)
        skipped = i > 0 and SKIP.search(lines[i - 1]) is not None
        start, body = i + 1, []
        i += 1
        while lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        i += 1
        if language not in COMMAND_LANGUAGES or skipped:
            continue
        commands, current, prompt = [], "", language != "console"
        for line in body:
            if language == "console" and not current:
                prompt = line.startswith("$ ")
                line = line[2:] if prompt else line
            if not prompt:
                continue  # a console block's output
            current += line[:-1].rstrip() + " " if line.endswith("\\") else line.strip()
            if not line.endswith("\\"):
                command = current.strip()
                if command and not command.startswith("#") and not SKIP_COMMAND.search(command):
                    commands.append(command)
                current = ""
        blocks.append((start, commands))
    return blocks


def expected_code(command: str) -> int:
    found = EXPECT.search(command)
    return int(found.group(1)) if found else 0


def script(commands: list[str], where: str) -> str:
    """Each command, then a check of its exit code; the first surprise stops the block."""
    lines = []
    for command in commands:
        want = expected_code(command)
        lines.append(command)
        lines.append(
            f'rc=$?; if [ "$rc" != {want} ]; then echo "{where}: command exited $rc, not {want}: "'
            f"{shlex.quote(command)} >&2; exit 1; fi"
        )
    return "\n".join(lines) + "\n"


def test_the_parser_reads_blocks_markers_and_exit_codes():
    text = (
        "<!-- readme-test: skip (installs) -->\n```bash\nmake demo\n```\n"
        "```bash\n# a comment\nagentpack a \\\n  --b c   # [exit 1] when it fails\ncd x\n"
        "agentpack view   # [skip: serves until stopped]\n```\n"
        "```yaml\nkey: value\n```\n"
        "```console\n$ agentpack validate x \\\n    --strict\nx (agent-skill): ok\n$ agentpack plugins\n```\n"
    )
    assert command_blocks(text) == [
        (5, ["agentpack a --b c   # [exit 1] when it fails", "cd x"]),
        (15, ["agentpack validate x --strict", "agentpack plugins"]),
    ]
    assert [expected_code(c) for c in command_blocks(text)[0][1]] == [1, 0]


def test_every_skip_states_its_reason():
    """A skip marker without a reason is not a skip: the block then runs (and a bare marker is flagged here)."""
    bare = re.compile(r"<!--\s*readme-test:\s*skip\s*-->|\[skip:\s*\]")
    for page in PAGES:
        assert not bare.search(page.read_text(encoding="utf-8")), f"{page.name}: a skip without its reason"


BLOCKS = [
    (page.relative_to(ROOT).as_posix(), line, commands)
    for page in PAGES
    for line, commands in command_blocks(page.read_text(encoding="utf-8"))
]


@pytest.fixture(scope="module")
def clones(tmp_path_factory):
    """Per page, a folder with a copy of examples/ (and git, so the run store lands in its .agentpack/)."""
    made: dict[str, Path] = {}

    def clone(page: str) -> Path:
        if page not in made:
            folder = tmp_path_factory.mktemp(Path(page).stem)
            shutil.copytree(
                ROOT / "examples", folder / "examples", ignore=shutil.ignore_patterns(".agentpack", "__pycache__")
            )
            subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=60)
            made[page] = folder
        return made[page]

    return clone


@pytest.mark.slow
@pytest.mark.parametrize(("page", "line", "commands"), BLOCKS, ids=[f"{page}:{line}" for page, line, _ in BLOCKS])
def test_the_documented_commands_work_as_written(clones, page, line, commands):
    for plugin in ("agentpack_ecp", "agentpack_agent_rpc", "agentpack_dci", "agentpack_openexperts"):
        pytest.importorskip(plugin)
    env = {k: v for k, v in os.environ.items() if k not in SECRETS and not k.startswith("AGENTPACK_")}
    env.update(
        PATH=f"{BIN}{os.pathsep}{env['PATH']}",
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        NO_PROXY="127.0.0.1,localhost",
        NO_COLOR="1",
    )
    result = subprocess.run(
        ["bash", "-c", script(commands, f"{page}:{line}")],
        cwd=clones(page),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{page}:{line}\n{result.stderr[-4000:]}"
