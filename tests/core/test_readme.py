"""Every command in README.md works as written: offline, without API keys, on a copy of ``examples/``.

The fenced ``bash`` blocks are run in order, each block as one shell (so a ``cd`` holds for the rest of
its block), from a temporary folder holding a copy of the repository's ``examples/``, with this venv's
``agentpack`` first on ``PATH``. Each command must exit 0, or the code its comment names as
``[exit N]``. A block after ``<!-- readme-test: skip (why) -->`` is not run. API keys are removed from
the environment and HTTP(S) proxies point at a closed port, so a command that reaches for the network
fails instead of passing by luck.
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
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
SKIP = re.compile(r"<!--\s*readme-test:\s*skip\b[^>]*-->\s*$")
EXPECT = re.compile(r"\[exit (\d+)\]")
SECRETS = ("OPENAI_API_KEY", "AGENTPACK_AGENT_RPC_JUDGE_API_KEY", "ANTHROPIC_API_KEY")


def bash_blocks(text: str) -> list[tuple[int, list[str]]]:
    """``(line, commands)`` of every bash block not marked skip; continued lines are joined."""
    blocks: list[tuple[int, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```bash":
            i += 1
            continue
        skipped = i > 0 and SKIP.search(lines[i - 1]) is not None
        start, body = i + 1, []
        i += 1
        while lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        commands, current = [], ""
        for line in body:
            current += line[:-1].rstrip() + " " if line.endswith("\\") else line.strip()
            if not line.endswith("\\"):
                if current.strip() and not current.strip().startswith("#"):
                    commands.append(current.strip())
                current = ""
        if not skipped:
            blocks.append((start, commands))
    return blocks


def expected_code(command: str) -> int:
    found = EXPECT.search(command)
    return int(found.group(1)) if found else 0


def script(commands: list[str]) -> str:
    """Each command, then a check of its exit code; the first surprise stops the block."""
    lines = []
    for command in commands:
        want = expected_code(command)
        lines.append(command)
        lines.append(
            f'rc=$?; if [ "$rc" != {want} ]; then echo "README command exited $rc, not {want}: "'
            f"{shlex.quote(command)} >&2; exit 1; fi"
        )
    return "\n".join(lines) + "\n"


def test_the_parser_reads_blocks_markers_and_exit_codes():
    text = (
        "<!-- readme-test: skip (installs) -->\n```bash\nmake demo\n```\n"
        "```bash\n# a comment\nagentpack a \\\n  --b c   # [exit 1] when it fails\ncd x\n```\n"
    )
    assert bash_blocks(text) == [(5, ["agentpack a --b c   # [exit 1] when it fails", "cd x"])]
    assert [expected_code(c) for c in bash_blocks(text)[0][1]] == [1, 0]


BLOCKS = bash_blocks(README.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A folder with a copy of examples/ (and git, so the run store lands in its .agentpack/)."""
    folder = tmp_path_factory.mktemp("readme")
    shutil.copytree(
        ROOT / "examples",
        folder / "examples",
        ignore=shutil.ignore_patterns(".agentpack", "__pycache__"),
    )
    subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=60)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize(("line", "commands"), BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_the_readme_commands_work_as_written(clone, line, commands):
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
        ["bash", "-c", script(commands)],
        cwd=clone,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, f"README.md:{line}\n{result.stderr[-4000:]}"
