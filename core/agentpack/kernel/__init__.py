"""The plugin system: hook specs, the host, what plugins register, and the data types hooks pass
(packs, findings, reports, runs). Imports only ``agentpack.io``."""
