"""A sample third-party plugin: a directory with a ``todo.txt`` is a to-do pack."""
