import os

from hypothesis import settings

pytest_plugins = ["agentpack.testing"]

# CI explores the same examples on every run (a property test must not turn a submission red by
# chance); locally, runs stay random so new counterexamples keep being found.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
