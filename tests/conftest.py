import atexit
import os
import shutil
import tempfile

from hypothesis import settings

pytest_plugins = ["agentpack.testing"]

# CI explores the same examples on every run (a property test must not turn a submission red by
# chance); locally, runs stay random so new counterexamples keep being found.
# Neither has a deadline: a time limit per example is a timed assertion, which a loaded machine fails by chance.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# Commands under test record their runs (agentpack eval, rpc run...): into a throwaway store, never the
# project's .agentpack/runs.sqlite nor a store the developer's shell names. Set before any test starts a
# subprocess, so those inherit it.
_RUNS = tempfile.mkdtemp(prefix="agentpack-test-runs-")
atexit.register(shutil.rmtree, _RUNS, True)
os.environ["AGENTPACK_RUNS"] = os.path.join(_RUNS, "runs.sqlite")
