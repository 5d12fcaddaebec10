"""Keeping a pack current: refresh, publish, rollback, backups, state, status, watch, policy."""
