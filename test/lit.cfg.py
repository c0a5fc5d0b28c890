"""lit configuration for rducc's FileCheck tests (dialects, passes, importer)."""

import os
import sys

import lit.formats

config.name = "rducc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.test_source_root = os.path.dirname(__file__)
# pytest tests and helpers live beside the lit tests; lit skips them.
config.excludes = ["python", "lit.cfg.py", "conftest.py", "timing_plugin.py", "__pycache__", "Inputs"]

# Tools come from the Python that runs lit (the project's venv).
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = bin_dir + os.pathsep + config.environment.get(
    "PATH", os.environ.get("PATH", "")
)
config.environment["PYTHONHASHSEED"] = "0"
config.substitutions.append(("%python", sys.executable))


def _stop(server) -> None:
    """Close the server's standard input: it stops; wait for it."""
    server.stdin.close()
    server.wait()


def _start_fork_server() -> None:
    """`rducc-opt`, `rducc` and `rducc-run` RUN lines, and `%python` scripts, run in one warm fork
    server (lit_fork/server.py) instead of a fresh Python each; it ends when this lit process does."""
    import atexit
    import shutil
    import subprocess
    import tempfile

    here = os.path.dirname(__file__)
    path = os.path.join(tempfile.mkdtemp(prefix="rducc-lit-"), "server")
    env = {**os.environ, **config.environment}
    server = subprocess.Popen([sys.executable, os.path.join(here, "lit_fork", "server.py"), path],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    if server.stdout.readline().strip() != b"ready":  # its error is on stderr
        lit_config.warning("the fork server (lit_fork/server.py) did not start: a fresh Python a RUN line")
        server.wait()
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
        return
    atexit.register(_stop, server)
    config.environment["RDUCC_LIT_FORK_SERVER"] = path
    config.environment["RDUCC_LIT_INSTALLED_BIN"] = bin_dir
    config.environment["PATH"] = os.path.join(here, "lit_fork") + os.pathsep + config.environment["PATH"]
    # `%python SCRIPT` and `%python -c CODE` run in the server too (it has imported torch and xDSL)
    config.substitutions[:] = [(key, os.path.join(here, "lit_fork", "python-fork") if key == "%python" else value)
                               for key, value in config.substitutions]


config.excludes.append("lit_fork")
if lit_config.params.get("fork_server", "1") != "0":  # `lit --param fork_server=0`: a fresh Python a line
    _start_fork_server()
