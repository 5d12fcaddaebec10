"""Built-in report renderers. Each module has one ``render(report) -> str``."""
