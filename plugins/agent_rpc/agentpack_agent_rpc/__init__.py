"""agentpack plugin: the JSON-RPC agent evaluation protocol."""


def __getattr__(name: str) -> str:
    if name == "__version__":  # agentpack's one version, imported only when asked for (the package stays light)
        from agentpack import __version__

        return __version__
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
