"""``agentpack ecp agent``: a pack served as an agent of the evaluation protocol (stdio or Streamable HTTP).

Implementations are imported when the command runs (``agentpack ecp --help`` imports none of them).
"""

from __future__ import annotations

from pathlib import Path

import click

from .output import PACK


@click.command()
@click.argument("pack", type=PACK)
@click.option("--http", "use_http", is_flag=True, help="Serve Streamable HTTP instead of stdio.")
@click.option("--host", "bind_host", default="127.0.0.1", show_default=True, help="Address for --http.")
@click.option("--port", default=8765, show_default=True, type=int, help="Port for --http (0 picks a free one).")
@click.option("--path", "endpoint", default="/ecp", show_default=True, help="Endpoint for --http.")
@click.option("-k", "--top-k", type=click.IntRange(min=1), help="Chunks retrieved per step (default 5).")
@click.option("--mode", help="Retrieval mode: keyword, fts, vector, hybrid (default: every index, fused).")
@click.option(
    "--synthesis", type=click.Choice(["auto", "local", "llm"]), help="How the answer is written (default auto)."
)
def agent(
    pack: Path,
    use_http: bool,
    bind_host: str,
    port: int,
    endpoint: str,
    top_k: int | None,
    mode: str | None,
    synthesis: str | None,
) -> None:
    """Serve PACK as an agent for `agentpack rpc run`: each step is a query of the pack.

    The step result's public_output is the answer, evaluation_context the citations
    (one line each) and tool_calls the retrieval (one expert.search call per index).
    agent/initialize's config may set top_k, mode, filters and synthesis.

    \b
    Examples:
      agentpack ecp agent examples/ecp/conformance-pack          # stdio, as a manifest's target
      agentpack ecp agent my-expert --http --port 8766            # http://127.0.0.1:8766/ecp
    """
    from ..agent.expert import expert_agent
    from ..pack.manifest import load_pack

    served = expert_agent(load_pack(pack), top_k=top_k, mode=mode, synthesis=synthesis)
    if use_http:
        served.serve_http(bind_host, port, endpoint)
    else:
        served.serve_stdio()


COMMANDS = [agent]
