"""The runtime on PostgreSQL (``agentpack-openexperts[postgres]``): a store, an approval desk and a
procrastinate queue that any number of processes share. Imported only for ``--store postgresql://``."""
