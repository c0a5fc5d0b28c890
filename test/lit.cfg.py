"""lit configuration for rducc's FileCheck tests (dialects, passes, importer)."""

import os
import sys

import lit.formats

config.name = "rducc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.test_source_root = os.path.dirname(__file__)
# pytest tests and helpers live beside the lit tests; lit skips them.
config.excludes = ["python", "lit.cfg.py", "conftest.py", "__pycache__", "Inputs"]

# Tools come from the Python that runs lit (the project's venv).
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = bin_dir + os.pathsep + config.environment.get(
    "PATH", os.environ.get("PATH", "")
)
config.environment["PYTHONHASHSEED"] = "0"
config.substitutions.append(("%python", sys.executable))
