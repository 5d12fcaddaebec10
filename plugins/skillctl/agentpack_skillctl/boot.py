"""The first code of a sandboxed skill: load the seccomp filters, then start the skill (stdlib only).

The runner passes this file's text to ``python -c`` (it is never imported for
this), with the arguments ``FILTERS PARENT MODE TARGET ARGS...``:

- ``FILTERS``: comma-separated BPF programs in hex, loaded in order;
- ``PARENT``: the runner's pid when the skill must die with it (``PR_SET_PDEATHSIG``), else ``0``;
- ``MODE``: ``file``, ``module`` or ``code`` run the Python skill in this very
  interpreter (``python FILE``, ``python -m MODULE``, ``python -c CODE``);
  ``exec`` starts another program through descriptor ``EXEC_FD``, the one
  ``execveat`` the exec filter lets through.

A seccomp filter that denies ``execve`` must be loaded after the skill's own
program has started, which no launcher can do for a program it then executes.
For Python skills this file is that program: the filter is loaded, and the
skill's code runs in the same process. Other programs are executed through a
descriptor number the skill can never create again (``RLIMIT_NOFILE`` is
lowered below it), so nothing else can pass the filter afterwards.
"""

EXEC_FD = 1023


def _boot() -> None:
    import os
    import sys

    if not sys.flags.safe_path and sys.path and sys.path[0] == "":
        del sys.path[0]  # the current folder is the skill's: nothing of it may load before the filters
    filters, parent, mode, target, *args = sys.argv[1:]
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def fail(message: str) -> None:
        sys.stderr.write(f"agentpack sandbox: {message}\n")
        sys.stderr.flush()
        os._exit(126)

    def check(result: int, what: str) -> None:
        if result != 0:
            fail(f"{what}: {os.strerror(ctypes.get_errno())}")

    if parent != "0":
        check(libc.prctl(1, 9, 0, 0, 0), "PR_SET_PDEATHSIG")  # SIGKILL when the runner's thread ends
        if os.getppid() != int(parent):
            os._exit(137)  # the runner is already gone
    if mode == "exec":
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard <= EXEC_FD:
            fail(f"RLIMIT_NOFILE {hard} leaves no room for descriptor {EXEC_FD}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (EXEC_FD + 1, hard))
        handle = os.open(target, os.O_PATH)
        os.dup2(handle, EXEC_FD, inheritable=True)  # inheritable: a script's interpreter opens /dev/fd/EXEC_FD
        os.close(handle)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, EXEC_FD), EXEC_FD))
    if filters:

        class Program(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        check(libc.prctl(38, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
        for text in filters.split(","):
            code = bytes.fromhex(text)
            buffer = ctypes.create_string_buffer(code, len(code))
            program = Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
            check(libc.prctl(22, 2, ctypes.byref(program), 0, 0), "loading the seccomp filter")
    if mode == "exec":
        os.execve(EXEC_FD, args, os.environ)  # fexecve: execveat(EXEC_FD, "", ..., AT_EMPTY_PATH)
    import __main__

    namespace = __main__.__dict__
    for name in ("_boot", "EXEC_FD"):
        del namespace[name]
    namespace["__doc__"] = None
    if mode == "module":
        import runpy

        sys.argv = [target, *args]
        if not sys.flags.safe_path:
            sys.path.insert(0, os.getcwd())
        runpy.run_module(target, run_name="__main__", alter_sys=True)
        return
    if mode == "file":  # as python FILE does (runpy.run_path would import pkgutil and typing: 3 ms more)
        sys.argv = [target, *args]
        if not sys.flags.safe_path:
            sys.path.insert(0, os.path.dirname(os.path.realpath(target)))
        import io

        with io.open_code(target) as script:
            compiled = compile(script.read(), target, "exec")
        namespace.update(__file__=target, __cached__=None)
    else:
        sys.argv = ["-c", *args]
        if not sys.flags.safe_path:
            sys.path.insert(0, "")
        compiled = compile(target, "<string>", "exec")
    exec(compiled, namespace)


if __name__ == "__main__":
    _boot()
