"""The settings of the Stage A Bradley-Terry fit (paper Table 2), in one frozen record.

The fit (:mod:`.bt_pairs`, :mod:`.bt`) reads them from here, and so does the dataset card,
which states them: soft preferences of weight ``soft_weight / w`` from every pair of a window
of ``w`` documents, hard (fallback) preferences of weight ``fallback_weight``, labels clipped
to ``label_clip``, a ridge of ``ridge``, L-BFGS with at most ``max_iter`` iterations per query.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BtSettings:
    """Paper Table 2: ridge 1e-4, L-BFGS, at most 250 iterations (per query)."""

    ridge: float = 1e-4
    max_iter: int = 250
    history: int = 10
    tolerance_grad: float = 1e-10
    soft_weight: float = 2.0                       # a soft pair weighs soft_weight / w
    fallback_weight: float = 1.0                   # a hard (fallback) pair
    label_clip: tuple[float, float] = (0.01, 0.99)  # soft labels sigmoid(s_i - s_j), clipped

    def to_dict(self) -> dict:
        """As the fit's summary records them."""
        return {"ridge": self.ridge, "max_iter": self.max_iter, "history": self.history,
                "tolerance_grad": self.tolerance_grad, "label_clip": list(self.label_clip),
                "soft_weight": f"{self.soft_weight:g}/w",
                "fallback_weight": self.fallback_weight}


BT_SETTINGS = BtSettings()
"""The settings every Stage A fit of this project uses (build, refit, the card's text)."""

__all__ = ["BT_SETTINGS", "BtSettings"]
