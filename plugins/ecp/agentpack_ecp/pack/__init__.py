"""The pack on disk: its manifest and files, where the lifecycle keeps things, logs, scaffolding."""
