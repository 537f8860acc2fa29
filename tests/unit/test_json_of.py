"""json_of: msgspec's decoder where it takes the bytes, json's answer everywhere else.

The synthesis's numbers rest on what a measures.json says, so the faster reading must give what
json.loads gives, object for object, on every text either accepts: a float's last bit, an integer
of any size, -0.0, a key given twice, escapes, and the texts only json takes (NaN, Infinity, an
unpaired surrogate), with json's own error on everything else.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentab.synthesis.runs.results import BadFile, _run_of, json_of


def json_answer(content: bytes):
    """What the synthesis read before: json.loads of the UTF-8 text, or the error's kind."""
    try:
        return ("value", json.loads(content.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        return ("error", type(error), str(error))


def our_answer(content: bytes):
    try:
        return ("value", json_of(content))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        return ("error", type(error), str(error))


def same(content: bytes) -> None:
    ours, theirs = our_answer(content), json_answer(content)
    # repr tells -0.0 from 0.0, 1 from 1.0 and True from 1, which == does not.
    assert repr(ours) == repr(theirs), content


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(values, st.booleans())
def test_any_json_text_reads_as_json_reads_it(value, ascii_only):
    same(json.dumps(value, ensure_ascii=ascii_only).encode("utf-8"))


@settings(max_examples=400, deadline=None)
@given(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["%r", "%.17g", "%.3e", "%.25e", "%.0f"]),
)
def test_a_float_written_any_way_reads_to_the_same_double(number, form):
    same((form % number).encode() if form != "%r" else repr(number).encode())


@settings(max_examples=600, deadline=None)
@given(st.data())
def test_a_damaged_file_reads_or_fails_as_json_has_it(data):
    text = bytearray(
        json.dumps(
            {
                "cell": "a · b",
                "rep": 3,
                "metrics": {"x": True, "y": 1.5e-7, "z": 10**25},
                "s": 'é"\\n',
            },
            ensure_ascii=False,
        ).encode()
    )
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text) - 1))
        action = data.draw(st.sampled_from(["replace", "delete", "insert"]))
        byte = data.draw(st.sampled_from(list(b'0123456789.eE+-"\\[]{},: \t\nntfu\xc3\xff')))
        if action == "replace":
            text[at] = byte
        elif action == "delete":
            del text[at]
        else:
            text.insert(at, byte)
    same(bytes(text))


@pytest.mark.parametrize(
    "content",
    [
        b"NaN", b"[Infinity, -Infinity]", b"1e400", b'"\\ud800"', b'"\\udc00\\ud800"',
        b"123456789012345678901234567890", b"-9223372036854775809", b"18446744073709551616",
        b'{"a": 1, "a": 2}', b"-0", b"-0.0", b"2.4703282292062328e-324", b"1.7976931348623159e308",
        b"\xef\xbb\xbf{}", b"\x0c{}", b"{} x", b"", b"[1,]", b'"\xed\xa0\x80"', b'"\xc3\xa9\\u00e9"',
        b"[" * 500 + b"]" * 500,
    ],
)  # fmt: skip
def test_the_texts_at_the_edges(content):
    same(content)


def test_a_file_nested_too_deeply_is_a_bad_file_not_a_traceback():
    found = _run_of(
        b"[" * 200_000 + b"]" * 200_000, "/r/measures.json", "runs/a/r01/measures.json", {}
    )
    assert isinstance(found, BadFile)
    assert found.message == "is not valid JSON: arrays or objects nested too deeply"
