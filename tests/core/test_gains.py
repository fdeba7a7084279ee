"""Item parameters and gain links (paper Eq. 4), checked against hand computations."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rcp_data.core.errors import InputError
from rcp_data.core.gains import ItemParams, gain, get_link


def _sig(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


PARAMS = ItemParams(gamma=(2.0, 1.0, 0.5), beta=(-1.0, 0.0, 1.5))


def test_weighted_discrimination_matches_hand_computation():
    theta = 0.3
    expected = (2.0 * _sig(2.0 * 1.3) + 1.0 * _sig(0.3) + 0.5 * _sig(0.5 * -1.2)) / 3.5
    assert gain(theta, PARAMS) == pytest.approx(expected, abs=1e-15)


def test_other_links_match_hand_computation():
    theta = np.array([-2.0, 0.0, 4.0])
    pp = np.array([[_sig(2.0 * (t + 1.0)), _sig(t), _sig(0.5 * (t - 1.5))] for t in theta])
    np.testing.assert_allclose(gain(theta, PARAMS, "unweighted"), pp.mean(axis=1), rtol=0, atol=1e-15)
    np.testing.assert_allclose(gain(theta, PARAMS, "logistic"), [_sig(t) for t in theta], atol=1e-15)
    np.testing.assert_allclose(gain(theta, PARAMS, "criterion:C3"), pp[:, 2], atol=1e-15)


def test_gain_is_vectorized_monotone_and_in_open_unit_interval():
    theta = np.linspace(-8, 8, 1001)
    g = gain(theta, PARAMS)
    assert g.shape == theta.shape
    assert np.all(np.diff(g) > 0)
    assert np.all((g > 0) & (g < 1))


def test_any_number_of_criteria():
    p = ItemParams.from_dict({"gamma": [1.0] * 7, "beta": list(np.linspace(-3, 3, 7))})
    assert p.n_criteria == 7 and p.criteria[-1] == "C7"
    # symmetric difficulties around 0 with equal discriminations give gain(0) = 1/2
    assert gain(0.0, p) == pytest.approx(0.5, abs=1e-15)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"gamma": [1.0, 2.0], "beta": [0.0]}, "'gamma' has 2 values but 'beta' has 1"),
        ({"gamma": [1.0, float("nan")], "beta": [0.0, 1.0]}, "gamma[1]"),
        ({"gamma": [1.0, 0.0], "beta": [0.0, 1.0]}, "must be positive"),
        ({"gamma": [1.0, -1.0], "beta": [0.0, 1.0]}, "must be positive"),
        ({"gamma": [1.0], "beta": [float("inf")]}, "beta[0]"),
        ({"beta": [0.0]}, "missing key 'gamma'"),
    ],
)
def test_bad_item_params_are_refused_with_a_clear_error(tmp_path, data, message):
    path = tmp_path / "item_params.json"
    path.write_text(json.dumps(data).replace("NaN", "NaN"))
    with pytest.raises(InputError) as exc:
        ItemParams.read(path)
    assert message in str(exc.value)
    assert str(path) in str(exc.value)


def test_unknown_link_and_criterion_are_refused():
    with pytest.raises(InputError, match="unknown link"):
        get_link("softmax")
    with pytest.raises(InputError, match="only 3 criteria"):
        gain(0.0, PARAMS, "criterion:C4")
    with pytest.raises(InputError, match="unknown criterion"):
        get_link("criterion:X1")


def test_round_trip_keeps_extra_keys(tmp_path):
    p = ItemParams.from_dict({"gamma": [1.5], "beta": [0.2], "fit": "map"})
    p.write(tmp_path / "p.json")
    q = ItemParams.read(tmp_path / "p.json")
    assert q == p and q.extra == {"fit": "map"}


def test_gain_mismatches_and_link_name():
    from rcp_data.core.gains import (
        DEFAULT_LINK,
        GAIN_TOLERANCE,
        gain_mismatches,
        link_name,
    )

    params = ItemParams((1.0, 2.0), (0.0, 0.5))
    theta = np.array([0.3, -1.0, np.nan, np.nan, 0.7])
    stored = gain(np.nan_to_num(theta), params)
    stored[[2, 3]] = [np.nan, 0.0]            # unscored: a null gain or 0 are both fine
    stored[4] += GAIN_TOLERANCE / 2           # within the tolerance
    bad, expected = gain_mismatches(theta, stored, params)
    assert not bad.any() and expected[2] == 0.0
    stored[1] += 10 * GAIN_TOLERANCE
    stored[3] = 0.25                          # unscored but a gain
    assert list(np.flatnonzero(gain_mismatches(theta, stored, params)[0])) == [1, 3]
    assert link_name({"method": "2pl-irt"}) == DEFAULT_LINK == "weighted_discrimination"
    assert link_name({"link": "logistic"}) == "logistic"


def test_pass_probabilities_of_a_vector_are_the_broadcast_numbers_bit_for_bit():
    """A 1-D theta is computed one criterion a row (faster); every value is the same float
    the (values x criteria) broadcast gives, so gains written before and after are equal."""
    from scipy.special import expit

    rng = np.random.default_rng(5)
    params = ItemParams(tuple(rng.random(5) + 0.3), tuple(rng.standard_normal(5)))
    theta = rng.standard_normal(10_001) * 3
    theta[::17] = np.nan
    g, b = np.asarray(params.gamma), np.asarray(params.beta)
    want = expit(g * (theta[:, None] - b))
    got = params.pass_probabilities(theta)
    assert got.shape == want.shape and got.flags.c_contiguous
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(gain(theta, params), want @ (g / g.sum()), equal_nan=True)


def test_gain_mismatches_in_blocks_equal_one_pass(monkeypatch):
    """The check computes the link in blocks of values; the verdicts and the expected gains
    are those of one call over every value."""
    from rcp_data.core import gains as gains_module
    from rcp_data.core.gains import GAIN_TOLERANCE, gain_mismatches

    rng = np.random.default_rng(6)
    theta = rng.standard_normal(1000)
    theta[rng.random(1000) < 0.2] = np.nan
    stored = np.where(np.isnan(theta), 0.0, gain(np.nan_to_num(theta), PARAMS))
    stored[rng.choice(1000, 30, replace=False)] += 3 * GAIN_TOLERANCE
    want_bad = ~(np.abs(stored - np.where(np.isnan(theta), 0.0, gain(theta, PARAMS)))
                 <= GAIN_TOLERANCE)
    monkeypatch.setattr(gains_module, "_BLOCK", 7)
    bad, expected = gain_mismatches(theta, stored, PARAMS)
    assert np.array_equal(bad, want_bad) and 0 < bad.sum() <= 30
    np.testing.assert_allclose(expected[~np.isnan(theta)], gain(theta[~np.isnan(theta)], PARAMS),
                               rtol=0, atol=1e-15)
