"""errors.listing: the problems of one input laid out one per line, repeats dropped, long lists capped."""

from demoforge.errors import MAX_LISTED, listing


def test_listing_puts_each_problem_on_its_own_indented_line():
    assert "bad:" + listing(["a", "b"]) == "bad:\n  a\n  b"
    assert listing([1, 2], indent="") == "\n1\n2"
    assert listing([]) == ""


def test_listing_drops_repeats_and_counts_what_it_does_not_show():
    lines = listing([f"block {i}" for i in range(500)] + ["block 0"]).splitlines()[1:]
    assert len(lines) == MAX_LISTED + 1
    assert lines[0] == "  block 0" and lines[-1] == "  ... and 480 more"
    assert listing(["x"] * 30).splitlines() == ["", "  x"]
