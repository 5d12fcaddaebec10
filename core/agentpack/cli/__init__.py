"""The ``agentpack`` command line: the click group, the building blocks every command uses, built-in commands."""
