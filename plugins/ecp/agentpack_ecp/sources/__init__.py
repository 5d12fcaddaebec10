"""Reading a pack's declared sources (directories, git, web snapshots, SQLite) into snapshots."""
