"""Offscreen framebuffers that give back all their memory.

moderngl's ``Framebuffer.release`` releases the framebuffer alone, not the
renderbuffers or textures it draws into: a ``simple_framebuffer`` made and
released per scene load (the demo's warm-up draw) kept its colour and depth
buffers, 1.8 MB of llvmpipe's memory a load at 640x360, and the window's
memory grew with every number key.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import moderngl

__all__ = ["offscreen_framebuffer", "release_framebuffer"]


def release_framebuffer(fbo: moderngl.Framebuffer) -> None:
    """Release ``fbo`` and what it draws into (for a framebuffer that owns its attachments)."""
    attachments = (*fbo.color_attachments, fbo.depth_attachment)
    fbo.release()
    for attachment in attachments:
        if attachment is not None:
            attachment.release()


@contextmanager
def offscreen_framebuffer(ctx: moderngl.Context, size: tuple[int, int]) -> Iterator[moderngl.Framebuffer]:
    """A colour and depth framebuffer of ``size`` for the ``with`` block, released whole after it."""
    fbo = ctx.simple_framebuffer(size)
    try:
        yield fbo
    finally:
        release_framebuffer(fbo)
