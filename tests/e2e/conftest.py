"""End-to-end fixtures: each harness installed once a session, by agentab's own install code."""

import pytest

from agentab.harnesses import get_harness
from tests.e2e.harness_world import (
    CLAUDE_CODE_VERSION,
    CODEX_VERSION,
    GEMINI_VERSION,
    HARNESSES_DIR,
    PI_VERSION,
)


@pytest.fixture(scope="session")
def pi_installation():
    return get_harness("pi").install(PI_VERSION, HARNESSES_DIR)


@pytest.fixture(scope="session")
def claude_installation():
    return get_harness("claude-code").install(CLAUDE_CODE_VERSION, HARNESSES_DIR)


@pytest.fixture(scope="session")
def codex_installation():
    return get_harness("codex").install(CODEX_VERSION, HARNESSES_DIR)


@pytest.fixture(scope="session")
def gemini_installation():
    return get_harness("gemini").install(GEMINI_VERSION, HARNESSES_DIR)
