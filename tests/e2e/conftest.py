"""End-to-end fixtures: pi 1.6.0 installed once, by agentab's own install code."""

from pathlib import Path

import pytest

from agentab.harnesses import get_harness

REPO = Path(__file__).resolve().parents[2]
HARNESSES_DIR = REPO / ".agentab" / "harnesses"  # git-ignored; shared by every test session
PI_VERSION = "1.6.0"


@pytest.fixture(scope="session")
def pi_installation():
    return get_harness("pi").install(PI_VERSION, HARNESSES_DIR)
