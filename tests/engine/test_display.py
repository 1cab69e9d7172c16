"""engine.display: why no window can open, asked of the display before a toolkit tries (GLFW aborts the
process on a display that is set but gone; tests/examples/ runs the examples against one)."""

import socket

from engine.display import display_problem


def test_no_display_set_is_named(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert display_problem() == "no display (DISPLAY and WAYLAND_DISPLAY are unset)"


def test_a_display_that_is_set_but_gone_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("DISPLAY", ":987654")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-gone")
    assert display_problem() == "the display ':987654' or 'wayland-gone' cannot be reached"


def test_a_wayland_socket_that_answers_is_enough(monkeypatch, tmp_path):
    monkeypatch.setenv("DISPLAY", ":987654")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-test")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(tmp_path / "wayland-test"))
        server.listen(1)
        assert display_problem() is None
