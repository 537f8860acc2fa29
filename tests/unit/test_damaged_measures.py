"""A measures.json that is not a readable JSON object is a bad file with its message, never a
traceback: the other runs still count."""

from __future__ import annotations

import pytest

from agentab.synthesis.runs.results import BadFile, _run_of

PATH, RELATIVE = "/r/runs/a/r01/measures.json", "runs/a/r01/measures.json"


def read(content: bytes | OSError):
    return _run_of(content, PATH, RELATIVE, {})


def test_a_file_nested_too_deeply_is_a_bad_file_not_a_traceback():
    found = read(b"[" * 200_000 + b"]" * 200_000)
    assert found == BadFile(RELATIVE, "is not valid JSON: arrays or objects nested too deeply")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{} x", "is not valid JSON: Extra data: line 1 column 4 (char 3)"),
        (b"", "is not valid JSON: Expecting value: line 1 column 1 (char 0)"),
        (b"[1,]", "is not valid JSON: Expecting value: line 1 column 4 (char 3)"),
        (b"\xef\xbb\xbf{}", "is not valid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig): "
         "line 1 column 1 (char 0)"),
        (b'{"cell": "\xff"}', "cannot be read: 'utf-8' codec can't decode byte 0xff in position "
         "10: invalid start byte"),
        (b"[]", "is not a JSON object"),
        (b"NaN", "is not a JSON object"),
    ],
)  # fmt: skip
def test_a_damaged_file_says_what_is_wrong(content, message):
    assert read(content) == BadFile(RELATIVE, message)


def test_an_unreadable_file_names_its_path():
    found = read(PermissionError(13, "Permission denied", PATH))
    assert found == BadFile(RELATIVE, f"cannot be read: [Errno 13] Permission denied: '{PATH}'")
