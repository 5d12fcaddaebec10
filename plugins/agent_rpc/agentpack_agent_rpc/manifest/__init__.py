"""An agent-rpc manifest: ``model`` (the records) < ``reader`` (the file, read once) and ``builder``
(document to ``Manifest``) < ``loader`` (``load_manifest``: schema, build, strict rules, findings)."""
