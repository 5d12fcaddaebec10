pytest_plugins = ["agentpack.testing"]
