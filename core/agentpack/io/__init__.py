"""The bottom layer: files, YAML and JSON from outside, paths, hashing, atomic writes, processes, sockets, the clock,
the console and the LLM client. Imports nothing else of agentpack."""
