"""partition(None, iterable) splits by each item's own truth value, on the checkout's code."""

import os
from pathlib import Path

import more_itertools as mi


def test_the_package_is_the_checkouts():
    assert Path(mi.__file__).resolve().is_relative_to(Path(os.getcwd()).resolve()), mi.__file__


def test_none_means_each_items_truth_value():
    falsy, truthy = mi.partition(None, [0, 1, False, True, "", " ", None, [], [0]])
    assert list(falsy) == [0, False, "", None, []]
    assert list(truthy) == [1, True, " ", [0]]


def test_a_predicate_still_decides():
    even, odd = mi.partition(lambda x: x % 2, range(6))
    assert (list(even), list(odd)) == ([0, 2, 4], [1, 3, 5])
