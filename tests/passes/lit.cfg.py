# lit configuration of the pass tests (tests/passes/*.sptxt), one file per pass in MLIR's shape:
# RUN lines, cases separated by `// -----`, FileCheck lines beside the input they check.
# run-lit.sh passes sp_opt (the binary), filecheck (FileCheck) and exec_root (where %t goes).
import os

import lit.formats

config.name = "sp-opt passes"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".sptxt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = lit_config.params.get("exec_root", os.path.join(config.test_source_root, "Output"))
# RUN lines name the tools bare, as MLIR's do: sp-opt and FileCheck come first on PATH.
tool_dirs = [os.path.dirname(lit_config.params["sp_opt"]), os.path.dirname(lit_config.params["filecheck"])]
config.environment["PATH"] = os.pathsep.join(tool_dirs + [os.environ.get("PATH", "")])
