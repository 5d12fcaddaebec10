from agentpack.cli.launch import run

run()
