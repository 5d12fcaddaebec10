"""Core-internal plugins (``DEFAULT_PLUGINS``), registered exactly like third-party ones."""
