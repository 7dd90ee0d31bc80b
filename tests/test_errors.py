"""errors.listing: the problems of one input one per line, repeats dropped, long lists capped;
errors.got: what a YAML reader gave, by type, and how to write a number it read as text."""

import pytest
import yaml

from demoforge.errors import MAX_LISTED, got, listing


def test_listing_puts_each_problem_on_its_own_indented_line():
    assert "bad:" + listing(["a", "b"]) == "bad:\n  a\n  b"
    assert listing([1, 2], indent="") == "\n1\n2"
    assert listing([]) == ""


def test_listing_drops_repeats_and_counts_what_it_does_not_show():
    lines = listing([f"block {i}" for i in range(500)] + ["block 0"]).splitlines()[1:]
    assert len(lines) == MAX_LISTED + 1
    assert lines[0] == "  block 0" and lines[-1] == "  ... and 480 more"
    assert listing(["x"] * 30).splitlines() == ["", "  x"]


@pytest.mark.parametrize("value, text", [
    ("abc", "the string 'abc'"),
    ("2", "the string '2' (a number in quotes is text to YAML; drop the quotes)"),
    (True, "the boolean true"),
    ([1, "x"], "a list [1, 'x']"),
    ({"a": 1}, "a mapping {'a': 1}"),
    (None, "null"),
    (5, "the number 5"),
])
def test_got_names_the_type_read(value, text):
    assert got(value) == text


@pytest.mark.parametrize("text, fix", [("1e300", "1.0e+300"), ("1e-3", "0.001"), ("1E5", "100000"),
                                       ("3e-9", "3.0e-09"), ("-1e20", "-1.0e+20"), ("1.5e7", "15000000")])
def test_got_says_how_to_write_a_number_yaml_read_as_text(text, fix):
    assert yaml.safe_load(f"x: {text}")["x"] == text  # PyYAML (YAML 1.1): no dot or no exponent sign, a string
    assert got(text) == f"the string {text!r} (YAML reads {text} as text; write {fix})"
    assert yaml.safe_load(f"x: {fix}")["x"] == float(text)
