"""The chapter-check helpers: they fail when the routes disagree, and when the wrong claim would pass."""

from __future__ import annotations

import numpy as np
import pytest

from attnscale import CheckCannotDiscriminate, CheckFailed, check_close, check_holds, check_true


def test_check_close_passes_and_returns_the_relative_discrepancy():
    assert check_close(1.0 + 1e-9, 1.0, check="x", rtol=1e-8, rules_out={"two": 2.0}) == pytest.approx(1e-9)


def test_check_close_fails_with_the_name_index_and_both_values():
    with pytest.raises(CheckFailed, match=r"check failed: demo at index \(1,\): got 2\.5, expected 2\.0"):
        check_close([1.0, 2.5], [1.0, 2.0], check="demo", rtol=1e-3, exempt="test")


def test_nan_never_passes():
    with pytest.raises(CheckFailed):
        check_close(np.nan, 1.0, check="nan", rtol=1.0, exempt="test")


def test_a_tolerance_that_accepts_the_wrong_claim_cannot_discriminate():
    with pytest.raises(CheckCannotDiscriminate, match="wrong claim 'factor 2'"):
        check_close(1.0, 1.0, check="loose", rtol=1.5, rules_out={"factor 2": 2.0})


def test_an_alternative_is_ruled_out_if_any_element_separates():
    # the wrong claim agrees at one index but not the other: the check still discriminates
    check_close([0.0, 1.0], [0.0, 1.0], check="arrays", atol=1e-9, rules_out={"drop": [0.0, 2.0]})
    with pytest.raises(CheckCannotDiscriminate):
        check_close([0.0, 1.0], [0.0, 1.0], check="arrays", atol=1e-9, rules_out={"same": [0.0, 1.0]})


def test_discriminating_is_a_check_failure_too():
    assert issubclass(CheckCannotDiscriminate, CheckFailed)


def test_check_true_names_the_check_and_the_wrong_claim():
    check_true(3 > 2, check="ok", rules_out={"null": 1 > 2})
    with pytest.raises(CheckFailed, match="check failed: bad: context"):
        check_true([True, False], check="bad", detail="context", exempt="test")
    with pytest.raises(CheckCannotDiscriminate, match="wrong claim 'null'"):
        check_true(True, check="weak", rules_out={"null": [True, True]})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rules_out": {}},
        {"rules_out": [1.0]},
        {"rules_out": {"": 1.0}},
        {"exempt": ""},
        {"exempt": 3},
        {"exempt": "why", "rules_out": {"a": 2.0}},
    ],
)
def test_bad_rules_out_or_exempt_is_a_type_error(kwargs):
    with pytest.raises(TypeError, match="demo"):
        check_close(1.0, 1.0, check="demo", **kwargs)
    with pytest.raises(TypeError, match="demo"):
        check_true(True, check="demo", **kwargs)


def test_a_zero_desired_value_or_alternative_raises_no_warning():
    # pytest turns warnings into errors: an overflow in the relative distance would fail here
    check_close(1e-3, 0.0, check="zero", atol=1e-2, rules_out={"one": 1.0})
    with pytest.raises(CheckFailed):
        check_close(1e300, 0.0, check="far", atol=1.0, exempt="test")
    check_close(5.0, 5.0, check="zero alternative", atol=1.0, rules_out={"zero": 0.0})


def test_failure_message_with_array_tolerance():
    import attnscale as at

    with pytest.raises(at.CheckFailed, match=r"atol=0.1..0.2"):
        at.check_close([1.0, 1.0], [2.0, 2.0], check="x", rtol=0, atol=np.array([0.1, 0.2]))


# --- check_holds: one claim, applied to the value and to each competing value ----


def test_check_holds_applies_the_same_claim_to_the_competing_value():
    increasing = lambda g: np.diff(g) > 0  # noqa: E731
    peaks = [1.0, 3.0, 2.0]
    check_holds(increasing, np.array([1.0, 2.0, 3.0]), check="increases", rules_out={"peaks": peaks})
    with pytest.raises(CheckCannotDiscriminate, match="also holds for the wrong claim's value 'flat'"):
        check_holds(increasing, [1.0, 2.0], check="increases", rules_out={"flat": [0.0, 5.0]})
    with pytest.raises(CheckFailed, match=r"check failed: increases \(1 of 2 false\)"):
        check_holds(increasing, [1.0, 2.0, 1.5], check="increases", rules_out={"peaks": [1.0, 3.0, 2.0]})


def test_check_holds_takes_a_list_of_conditions_and_insists_on_a_callable():
    check_holds(
        lambda c: [c >= 0.8, c < 2.0], 0.9, check="in range", rules_out={"too small": 0.5, "too big": 3.0}
    )
    with pytest.raises(TypeError, match="claim must be callable"):
        check_holds(True, 1.0, check="x", exempt="none")
    with pytest.raises(TypeError, match="either rules_out or exempt"):
        check_holds(lambda v: v > 0, 1.0, check="x", rules_out={"a": -1.0}, exempt="why")
