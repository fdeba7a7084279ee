"""Item parameters of the 2PL calibration and the links that turn ``theta`` into a gain.

Paper Eq. 4 (``weighted_discrimination``)::

    gain(theta) = sum_c gamma_c * sigmoid(gamma_c * (theta - beta_c)) / sum_c gamma_c
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rcp_data.core.errors import InputError
from rcp_data.core.io import atomic_write_text, read_json

if TYPE_CHECKING:  # numpy is imported where a gain is computed (reading a history needs none)
    import numpy as np

DEFAULT_LINK = "weighted_discrimination"
LINK_NAMES = ("weighted_discrimination", "unweighted", "logistic", "criterion:<Cn>")
GAIN_TOLERANCE = 1e-12          # a stored gain equals the link of its theta within this
_BLOCK = 1 << 16                # values whose gains are computed at once when checking


def link_name(calibration: Mapping) -> str:
    """The gain link a calibration record names (``link``; the default link when absent)."""
    return str(calibration.get("link", DEFAULT_LINK))


@dataclass(frozen=True)
class ItemParams:
    """Discriminations ``gamma`` and difficulties ``beta`` of criteria C1..Cn."""

    gamma: tuple[float, ...]
    beta: tuple[float, ...]
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def n_criteria(self) -> int:
        return len(self.gamma)

    @property
    def criteria(self) -> list[str]:
        return [f"C{i + 1}" for i in range(self.n_criteria)]

    @classmethod
    def from_dict(cls, data: dict, *, source: str = "<item_params>") -> ItemParams:
        if not isinstance(data, dict):
            raise InputError("item parameters must be a JSON object", path=source)
        for key in ("gamma", "beta"):
            if key not in data:
                raise InputError(f"missing key {key!r}", path=source, field=key)
            if not isinstance(data[key], list) or not data[key]:
                raise InputError(f"{key!r} must be a non-empty list", path=source, field=key)
        gamma, beta = data["gamma"], data["beta"]
        if len(gamma) != len(beta):
            raise InputError(
                f"'gamma' has {len(gamma)} values but 'beta' has {len(beta)}; "
                "they must name the same criteria",
                path=source,
            )
        for key, values in (("gamma", gamma), ("beta", beta)):
            for i, v in enumerate(values):
                if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                    raise InputError(
                        f"{key}[{i}] = {v!r} is not a finite number", path=source, field=key
                    )
        for i, g in enumerate(gamma):
            if g <= 0:
                raise InputError(
                    f"gamma[{i}] = {g!r} must be positive (a discrimination)",
                    path=source,
                    field="gamma",
                )
        extra = {k: v for k, v in data.items() if k not in ("gamma", "beta")}
        return cls(tuple(float(g) for g in gamma), tuple(float(b) for b in beta), extra)

    @classmethod
    def read(cls, path: str | Path) -> ItemParams:
        path = Path(path)
        data = read_json(path)
        return cls.from_dict(data, source=str(path))

    def to_dict(self) -> dict:
        return {"gamma": list(self.gamma), "beta": list(self.beta), **self.extra}

    def write(self, path: str | Path) -> None:
        atomic_write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")

    def pass_probabilities(self, theta: np.ndarray | Sequence[float]) -> np.ndarray:
        """P(criterion c passes | theta), shape ``theta.shape + (n_criteria,)``."""
        import numpy as np
        from scipy.special import expit  # imported when a gain is computed

        t = np.asarray(theta, dtype=np.float64)
        g = np.asarray(self.gamma)
        b = np.asarray(self.beta)
        if t.ndim == 1:  # one criterion a row while computing: loops along the values, same numbers
            return np.ascontiguousarray(expit(g[:, None] * (t[None, :] - b[:, None])).T)
        return expit(g * (t[..., None] - b))


def _weighted(params: ItemParams, theta: np.ndarray) -> np.ndarray:
    import numpy as np

    g = np.asarray(params.gamma)
    return params.pass_probabilities(theta) @ (g / g.sum())


def _unweighted(params: ItemParams, theta: np.ndarray) -> np.ndarray:
    return params.pass_probabilities(theta).mean(axis=-1)


def _logistic(params: ItemParams, theta: np.ndarray) -> np.ndarray:
    import numpy as np
    from scipy.special import expit

    return expit(np.asarray(theta, dtype=np.float64))


def get_link(name: str = DEFAULT_LINK) -> Callable[[ItemParams, np.ndarray], np.ndarray]:
    """Return the link function named ``name`` (see ``LINK_NAMES``)."""
    if name == "weighted_discrimination":
        return _weighted
    if name == "unweighted":
        return _unweighted
    if name == "logistic":
        return _logistic
    if name.startswith("criterion:"):
        crit = name.split(":", 1)[1]
        if not (crit.startswith("C") and crit[1:].isdigit() and int(crit[1:]) >= 1):
            raise InputError(f"unknown criterion {crit!r} in link {name!r}; expected e.g. criterion:C3")
        idx = int(crit[1:]) - 1

        def _one(params: ItemParams, theta: np.ndarray) -> np.ndarray:
            if idx >= params.n_criteria:
                raise InputError(
                    f"link {name!r} names criterion {crit} but the item parameters have "
                    f"only {params.n_criteria} criteria"
                )
            return params.pass_probabilities(theta)[..., idx]

        return _one
    raise InputError(f"unknown link {name!r}; choose one of {', '.join(LINK_NAMES)}")


def gain(theta: np.ndarray | Sequence[float] | float, params: ItemParams,
         link: str = DEFAULT_LINK) -> np.ndarray:
    """Vectorized gain of ``theta`` under ``link``; NaN theta gives NaN."""
    import numpy as np

    return get_link(link)(params, np.asarray(theta, dtype=np.float64))


def gain_mismatches(theta: np.ndarray, gains: np.ndarray, params: ItemParams,
                    link: str = DEFAULT_LINK) -> tuple[np.ndarray, np.ndarray]:
    """``(bad, expected)``: which stored ``gains`` differ from ``link(theta)`` by more than
    :data:`GAIN_TOLERANCE`, and the link's values. A NaN theta (a document the judge never
    scored) expects gain 0, and a NaN gain there reads as 0; a NaN gain elsewhere is bad."""
    import numpy as np

    theta = np.asarray(theta, dtype=np.float64)
    gains = np.asarray(gains, dtype=np.float64)
    scored = ~np.isnan(theta)
    expected = np.zeros_like(theta)
    if scored.any():
        at = np.flatnonzero(scored)
        for i in range(0, len(at), _BLOCK):  # a block's (values x criteria) temporaries in cache
            expected[at[i:i + _BLOCK]] = gain(theta[at[i:i + _BLOCK]], params, link)
    stored = np.where(~scored & np.isnan(gains), 0.0, gains)
    return ~(np.abs(stored - expected) <= GAIN_TOLERANCE), expected


def count_gain(passes: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Count-nDCG's gain (paper Eq. 5): a document's passed criteria over ``C * n``, its
    criteria times its Stage B windows. ``passes``: ``(D, C)`` pass counts, ``n``: ``(D,)``
    placements; a document never placed (``n == 0``) gains 0."""
    import numpy as np

    passes = np.asarray(passes, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    asked = n * passes.shape[-1]
    return np.divide(passes.sum(axis=-1), asked, out=np.zeros_like(asked), where=asked > 0)
