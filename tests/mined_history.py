"""A history with known good and bad candidates for `agentab tasks mine`, built as real commits.

A small shop module with unittest tests; after the tag `base`:

    good-discount   fixes total() ignoring the discount, with a test that fails before   kept
    refactor        renames a helper, no test                                            not a candidate
    flaky           fixes rounding, with tests that pass or fail at random               stable
    no-random       removes those random tests (a deletion is no test to hide)           not a candidate
    tax-tests       adds tests for tax(), which already works                            fail-to-pass
    break-build     breaks build.py (the setup), no test                                 not a candidate
    fix-build       fixes build.py and parse(), with a test: its parent does not build   builds
    good-parse      fixes parse() of negative numbers (#12), a test that fails before    kept
    breaks-format   fixes a new currency test, and breaks the old format test            fail-to-pass
    breaks-tax      fixes the tax rate with a test of its own, and breaks test_tax in    fail-to-pass
                    tests/test_shop.py, a file it leaves alone (the whole suite runs)

The setup every candidate runs is `python3 build.py`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

SETUP = "python3 build.py"
KEPT = ("fix-total-ignoring-the", "fix-parse-of-negative-numbers")
DROPPED = {
    "Fix rounding of prices": ("stable", "flaky"),
    "Add tests for tax": ("fail-to-pass", "its tests pass without the fix"),
    "Fix the currency symbol": ("fail-to-pass", "breaks tests that passed before"),
    "Fix the tax rate": (
        "fail-to-pass",
        "breaks tests that passed before: tests.test_shop.TestShop.test_tax",
    ),
    "Fix parse of thousands and the build": ("builds", "does not build before the fix"),
}
NOT_CANDIDATES = {
    "Rename the rounding helper": "changes no test",
    "Break the build": "changes no test",
    "Remove the random tests": "changes neither code nor tests",
}

SHOP = """\
def total(prices, discount=0.0):
    return sum(prices)


def tax(amount):
    return round(amount * 0.2, 2)


def money(amount):
    return "$" + format(amount, ".2f")


def parse(text):
    return int(text.strip())


def _round(value):
    return round(value)
"""

TESTS = """\
import unittest

import shop


class TestShop(unittest.TestCase):
    def test_total(self):
        self.assertEqual(shop.total([1, 2]), 3)

    def test_money(self):
        self.assertEqual(shop.money(2), "$2.00")


if __name__ == "__main__":
    unittest.main()
"""

FLAKY_TESTS = """\
import os
import unittest

import shop


class TestRounding(unittest.TestCase):
    def test_round_half(self):
        self.assertEqual(shop.price(2.675), 2.68)

    def test_timing_a(self):
        self.assertTrue(os.urandom(1)[0] % 2)

    def test_timing_b(self):
        self.assertTrue(os.urandom(1)[0] % 2)

    def test_timing_c(self):
        self.assertTrue(os.urandom(1)[0] % 2)
"""

RATE_TESTS = """\
import unittest

import shop


class TestRate(unittest.TestCase):
    def test_rate(self):
        self.assertEqual(shop.tax(4), 1.0)
"""


def git(repo: Path, *args: str) -> str:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "dev",
        "GIT_AUTHOR_EMAIL": "dev@example.invalid",
        "GIT_COMMITTER_NAME": "dev",
        "GIT_COMMITTER_EMAIL": "dev@example.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def commit(repo: Path, message: str, files: dict[str, str]) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def edit(repo: Path, path: str, old: str, new: str) -> dict[str, str]:
    text = (repo / path).read_text()
    assert old in text, (path, old)
    return {path: text.replace(old, new, 1)}


def add_test(repo: Path, path: str, method: str) -> dict[str, str]:
    return edit(
        repo, path, '\n\nif __name__ == "__main__":', f'\n{method}\n\nif __name__ == "__main__":'
    )


def build_history(repo: Path) -> Path:
    """The history above, in a new repository at `repo`; returns it."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "Start the shop", {
        "shop.py": SHOP, "tests/__init__.py": "", "tests/test_shop.py": TESTS,
        "build.py": "print('built')\n", "README.md": "# shop\n",
    })  # fmt: skip
    git(repo, "tag", "base")
    commit(repo, "Fix total ignoring the discount\n\nA discount of 0.1 must take 10% off.", {
        **edit(repo, "shop.py", "return sum(prices)", "return sum(prices) * (1 - discount)"),
        **add_test(repo, "tests/test_shop.py",
                   "    def test_discount(self):\n"
                   "        self.assertAlmostEqual(shop.total([10, 10], 0.1), 18)"),
        "CHANGELOG.md": "- total() applies the discount\n",
    })  # fmt: skip
    commit(
        repo, "Rename the rounding helper", edit(repo, "shop.py", "def _round(", "def _rounded(")
    )
    commit(repo, "Fix rounding of prices", {
        **edit(repo, "shop.py", "def tax(", "def price(value):\n    return float(f'{value + 1e-9:.2f}')\n\n\ndef tax("),
        "tests/test_rounding.py": FLAKY_TESTS,
    })  # fmt: skip
    git(repo, "rm", "-q", "tests/test_rounding.py")
    git(repo, "commit", "-q", "-m", "Remove the random tests")
    commit(repo, "Add tests for tax", {
        **edit(repo, "shop.py", "def tax(amount):", "def tax(amount):  # 20%"),
        **add_test(repo, "tests/test_shop.py",
                   "    def test_tax(self):\n        self.assertEqual(shop.tax(10), 2.0)"),
    })  # fmt: skip
    commit(repo, "Break the build", {"build.py": "raise SystemExit('the build is broken')\n"})
    commit(repo, "Fix parse of thousands and the build", {
        "build.py": "print('built')\n",
        **edit(repo, "shop.py", "return int(text.strip())", "return int(text.strip().replace(',', ''))"),
        **add_test(repo, "tests/test_shop.py",
                   '    def test_thousands(self):\n        self.assertEqual(shop.parse("1,000"), 1000)'),
    })  # fmt: skip
    commit(repo, "Fix parse of negative numbers\n\nFixes #12.", {
        **edit(repo, "shop.py", "def parse(text):\n", "def parse(text):\n    text = text.replace('\\u2212', '-')\n"),
        **add_test(repo, "tests/test_shop.py",
                   '    def test_minus_sign(self):\n        self.assertEqual(shop.parse("\\u22125"), -5)'),
    })  # fmt: skip
    commit(repo, "Fix the currency symbol", {
        **edit(repo, "shop.py", 'return "$" + format', 'return "EUR " + format'),
        **add_test(repo, "tests/test_shop.py",
                   '    def test_euro(self):\n        self.assertEqual(shop.money(1), "EUR 1.00")'),
    })  # fmt: skip
    commit(repo, "Fix the tax rate", {
        **edit(repo, "shop.py", "return round(amount * 0.2, 2)", "return round(amount * 0.25, 2)"),
        "tests/test_rate.py": RATE_TESTS,
    })  # fmt: skip
    return repo
