"""The map inset's scale-bar label on headless frames, painted with Pillow.

The window draws the label with pyglet at :func:`engine.map_geometry.label_position`;
a headless frame is a Pillow image, painted here at the same place.
"""

from __future__ import annotations

from typing import Any

from engine.map_geometry import MapGeometry, label_position

__all__ = ["draw_map_label"]


def draw_map_label(image: Any, geometry: MapGeometry, font_size: int = 12) -> Any:
    """Paint the scale bar's label on a Pillow image of the whole frame (headless frames)."""
    from PIL import ImageDraw

    from engine.hud import hud_font

    px, py = label_position(geometry, image.size)
    # The text's bottom (its descent, "ld") 4 px above the place, as the window's pyglet label (bottom-anchored):
    # its top-left placed at font_size + 2 above it sat 5 px lower, the bar through the digits.
    ImageDraw.Draw(image).text((px, py - 4), geometry.label, font=hud_font(font_size), fill=(255, 255, 255),
                               anchor="ld")
    return image
