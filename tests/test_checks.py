"""The argument predicates and checks every layer shares (dynasched_gym/checks.py)."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dynasched_gym.checks import (
    as_list,
    check_arguments,
    check_bool,
    check_choice,
    check_choices,
    check_integer,
    check_path,
    check_positive,
    check_real,
    holds_exactly,
    in_interval,
    is_finite_real,
    is_integer,
    is_real,
    keyword_arguments,
    named_items,
)

INTEGERS = [0, -3, 2**70, np.int64(5), np.uint8(1)]
REALS = [0.5, -1e300, np.float32(2.5), np.float64(-0.0), Fraction(1, 3)]
NON_FINITE = [float("nan"), float("inf"), np.float64("-inf"), 10**400]  # 10**400: beyond the float range
NOT_NUMBERS = [True, np.bool_(False), None, "1", [1], 1j]


@pytest.mark.parametrize("value", INTEGERS + REALS + NON_FINITE + NOT_NUMBERS)
def test_predicates(value: object) -> None:
    integer = any(value is x for x in INTEGERS) or any(value is x for x in NON_FINITE[-1:])
    real = integer or any(value is x for x in REALS + NON_FINITE)
    assert is_integer(value) == integer
    assert is_real(value) == real
    assert is_finite_real(value) == (real and not any(value is x for x in NON_FINITE))


@pytest.mark.parametrize(("value", "error"), [(True, TypeError), (2.0, TypeError), (np.int32(0), ValueError),
                                              (-1, ValueError)])
def test_check_integer_names_the_argument(value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=re.escape(f"count must be an integer >= 1, got {value!r}")):
        check_integer("count", value, 1)
    assert check_integer("count", np.int16(3), 1) == 3 and type(check_integer("count", np.int16(3), 1)) is int
    assert check_integer("count", 1, 1) == 1  # the minimum itself
    with pytest.raises(ValueError, match=re.escape("count must be at most 5, got 6")):
        check_integer("count", 6, 1, maximum=5)
    assert check_integer("count", 5, 1, maximum=5) == 5


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (-1.0, ValueError), (float("nan"), ValueError),
                                              (10**400, ValueError), (True, TypeError), ("2", TypeError)])
def test_check_positive_names_the_argument(value: object, error: type[Exception]) -> None:
    """A value of the wrong type is a TypeError, a number out of range a ValueError (as check_integer's)."""
    with pytest.raises(error, match="scale must be a finite number > 0"):
        check_positive("scale", value)
    check_positive("scale", np.float32(0.5))


@pytest.mark.parametrize("value", [5, None, b"out.json", ["out.json"]])
def test_check_path_names_the_argument(value: object) -> None:
    with pytest.raises(TypeError, match=re.escape(f"out must be a path (str or os.PathLike), got "
                                                  f"{type(value).__name__}: {value!r}")):
        check_path("out", value)
    assert check_path("out", "a/b.json") == check_path("out", Path("a/b.json")) == Path("a/b.json")
    with pytest.raises(ValueError, match="out must be a path without NUL characters"):
        check_path("out", "a\x00b.json")


@pytest.mark.parametrize("value", ["no", 1, None, np.array([True])])
def test_check_bool_takes_python_and_numpy_bools(value: object) -> None:
    """A NumPy bool (``terminated[i]``, ``mask.all()``) is true or false: validate_schedule(require_finished=np.True_)
    worked until require_finished was checked, and then was refused as 'must be true or false, got np.True_'."""
    with pytest.raises(TypeError, match=re.escape(f"flag must be true or false, got {value!r}")):
        check_bool("flag", value)
    for given in (True, np.True_, False, np.False_):
        assert type(check_bool("flag", given)) is bool and check_bool("flag", given) == given


def test_check_choices_refuses_an_item_given_twice() -> None:
    """``tiers=[easy,easy]`` played every episode twice (the second row dropped), ``only=[kernel,kernel]`` measured the
    section twice."""
    with pytest.raises(ValueError, match=re.escape("tiers[2] repeats 'easy' (tiers[0]): name each once")):
        check_choices("tiers", ["easy", "hard", "easy"], ("easy", "hard"))


def test_check_choices_names_the_item() -> None:
    """One value given alone is a list of one (not of its letters); an error names the item by its index."""
    assert check_choices("tiers", "easy", ("easy", "hard")) == ["easy"]
    assert check_choices("tiers", ["hard", "easy"], ("easy", "hard")) == ["hard", "easy"]
    with pytest.raises(ValueError, match=re.escape("tiers must be one of ('easy',), got 'hard'")):
        check_choices("tiers", "hard", ("easy",))
    with pytest.raises(ValueError, match=re.escape("tiers[1] must be one of ('easy',), got 'hardd'")):
        check_choices("tiers", ("easy", "hardd"), ("easy",))
    for alone in (1.5, {"a": 1}, None, np.array("hard")):  # one item each (1.5 was iterated), and no string
        with pytest.raises(TypeError, match=re.escape(f"tiers must be one of ('easy',), got {type(alone).__name__}: "
                                                      f"{alone!r}")):
            check_choices("tiers", alone, ("easy",))
    with pytest.raises(TypeError, match=re.escape("tier must be one of ('easy',), got ndarray")):
        check_choice("tier", np.array(["easy", "hard"]), ("easy",))  # was "the truth value of an array ... ambiguous"
    for misspelt, meant in (("ful", "full"), ("FULL", "full"), ("Concise", "concise")):
        with pytest.raises(ValueError, match=re.escape(f"got {misspelt!r} (did you mean {meant!r}?)")):
            check_choice("observability", misspelt, ("concise", "full", "oracle"))
    with pytest.raises(ValueError, match=r"got 'xyz'$"):
        check_choice("observability", "xyz", ("concise", "full", "oracle"))  # nothing close: no guess


def test_intervals_and_their_bounds() -> None:
    """Each end is closed unless said open, and the message writes it so; values come back as floats."""
    assert in_interval(1.0, 0.0, 1.0) and not in_interval(1.0, 0.0, 1.0, high_open=True)
    assert in_interval(0.0, 0.0, 1.0) and not in_interval(0.0, 0.0, 1.0, low_open=True)
    assert check_real("rate", 1, 0.0, 1.0) == 1.0 and type(check_real("rate", 1, 0.0, 1.0)) is float
    with pytest.raises(ValueError, match=re.escape("rate must be a finite number in (0, 1], got 0.0")):
        check_real("rate", 0.0, 0.0, 1.0, open_low=True)


def test_holds_exactly_refuses_integers_float64_would_round() -> None:
    assert holds_exactly(2**53) and holds_exactly(0.1) and not holds_exactly(2**53 + 1)
    # NumPy compared np.int64(2**53 + 1) with its rounded float as equal
    assert holds_exactly(np.int64(2**62)) and not holds_exactly(np.int64(2**53 + 1))
    assert not holds_exactly(np.uint64(2**64 - 1)) and not holds_exactly(-(2**53) - 1)
    assert holds_exactly(np.float32(0.1)) and holds_exactly(np.float64(2.5)) and holds_exactly(Fraction(1, 3))


def test_settings_of_one_item_or_a_list() -> None:
    """A string or bytes is one item, not its letters; a list's items are named by index."""
    assert as_list("easy") == ["easy"] and as_list(["easy", "hard"]) == ["easy", "hard"]
    assert named_items("out", b"ab") == [("out", b"ab")]
    assert named_items("tiers", ("a", "b")) == [("tiers[0]", "a"), ("tiers[1]", "b")]


def test_unknown_keyword_arguments_are_named_with_the_nearest_one() -> None:
    class Agent:
        def __init__(self, seed: int = 0, **kwargs: object) -> None: ...

    assert keyword_arguments(Agent) == ["seed"]  # not the **kwargs passed on
    with pytest.raises(TypeError, match=re.escape("Agent got an unknown argument 'sede' (did you mean 'seed'?); its "
                                                  "arguments are seed (docs/agents.md)")):
        check_arguments("Agent", {"seed": 1, "sede": 2}, keyword_arguments(Agent), "docs/agents.md")
