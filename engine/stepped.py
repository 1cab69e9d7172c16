"""A control that moves in whole steps: the view-distance scale (+ / -) and the flying speed (the wheel).

Clamping a product (``value * 1.25`` limited to 32) leaves the value off the
powers of the step once it hits a limit that is not one of them, and the
default is then never reachable again (``32 / 1.25 ** 15`` is 1.13).  A
:class:`Stepped` keeps a whole step count clamped to a range instead, so its
value is always the default times a whole power of the step.

>>> speed = Stepped(default=25.0, step=1.25, steps=(-2, 3))
>>> speed.move(10), speed.value, speed.at_limit
(3, 48.828125, True)
>>> speed.move(-3), speed.value, speed.at_limit          # as many steps back: the default again
(0, 25.0, False)
>>> speed.move(-5), speed.value, speed.at_limit
(-2, 16.0, True)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Stepped", "scale_text"]


@dataclass
class Stepped:
    """``default * step ** count`` for a whole ``count`` within ``steps`` (lowest, highest).

    Parameters
    ----------
    default : float
        The value at count 0.
    step : float
        One step multiplies the value by this (> 1).
    steps : (int, int)
        The lowest and highest count, ``lowest <= 0 <= highest``: the limits are
        exact powers of the step from the default.
    """

    default: float
    step: float
    steps: tuple[int, int]
    count: int = 0

    def __post_init__(self) -> None:
        lowest, highest = self.steps
        if not lowest <= 0 <= highest:
            raise ValueError(f"steps must hold 0 (lowest <= 0 <= highest), got {self.steps}")
        if not self.step > 1.0:
            raise ValueError(f"step must be > 1, got {self.step}")

    @property
    def value(self) -> float:
        return self.default * self.step ** self.count

    @property
    def limits(self) -> tuple[float, float]:
        """The lowest and highest value."""
        lowest, highest = self.steps
        return self.default * self.step ** lowest, self.default * self.step ** highest

    @property
    def at_limit(self) -> bool:
        """Whether the count is at either end: a further step that way changes nothing."""
        return self.count in self.steps

    def move(self, by: int) -> int:
        """Step ``by`` whole steps (negative: down), stopping at the ends; returns the new count."""
        lowest, highest = self.steps
        self.count = min(max(self.count + int(by), lowest), highest)
        return self.count


def scale_text(scale: float) -> str:
    """The view-distance scale as the HUD and the status line say it: two decimals, two significant digits below 0.1
    (two decimals gave x0.04 for two presses in a row, 0.044 and 0.035).

    >>> scale_text(1.0), scale_text(1.25 ** 16), scale_text(0.8 ** 14), scale_text(0.8 ** 15)
    ('1.00', '35.53', '0.044', '0.035')
    >>> scale_text(0.0996), scale_text(0.0994)   # a zoom eases through them: never a bare "0.1"
    ('0.10', '0.099')
    """
    return f"{scale:.2f}" if scale >= 0.0995 else f"{scale:.2g}"
