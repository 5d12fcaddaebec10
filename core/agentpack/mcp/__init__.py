"""agentpack over the Model Context Protocol."""
