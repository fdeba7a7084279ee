"""The gain link written out by hand from the design note (independent of rcp_data.core.gains):
gain(theta) = sum_c gamma_c * sigmoid(gamma_c * (theta - beta_c)) / sum_c gamma_c."""

from __future__ import annotations

import math

import numpy as np


def weighted_discrimination(theta, params) -> np.ndarray:
    """The paper's weighted-discrimination link, one document at a time with ``math.exp``."""
    gamma, beta = list(params.gamma), list(params.beta)
    total = sum(gamma)

    def one(t: float) -> float:
        return sum(g / (1.0 + math.exp(-g * (t - b))) for g, b in zip(gamma, beta, strict=True)) / total

    return np.array([one(float(t)) for t in np.asarray(theta, dtype=float)])
