"""engine.files: the image folder checked before any work, and files written whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.files import unwritable_folder, write_atomically


def test_a_write_lands_under_its_name_through_a_hidden_temporary_with_the_same_suffix(tmp_path):
    seen: list[Path] = []

    def write(tmp: Path) -> None:
        seen.append(tmp)
        tmp.write_bytes(b"whole")

    path = tmp_path / "new" / "frame_0000.png"
    write_atomically(path, write)
    assert path.read_bytes() == b"whole"
    assert seen[0].parent == path.parent and seen[0].name.startswith(".") and seen[0].suffix == ".png"
    assert [p.name for p in path.parent.iterdir()] == ["frame_0000.png"]


@pytest.mark.parametrize("error", [KeyboardInterrupt, OSError])
def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path, error):
    path = tmp_path / "frame_0000.png"
    path.write_bytes(b"old")

    def write(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise error()

    with pytest.raises(error):
        write_atomically(path, write)
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["frame_0000.png"]


def test_an_unwritable_folder_is_named_before_any_work(tmp_path):
    assert unwritable_folder(tmp_path / "a" / "b") is None
    (tmp_path / "file").write_text("")
    assert unwritable_folder(tmp_path / "file") == f"--out {tmp_path / 'file'} is not a folder"
    assert "is a file" in unwritable_folder(tmp_path / "file" / "sub")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_folder_no_file_can_be_created_in_is_named_as_such():
    # It read "--out /proc/nope is not writable (/proc): No such file or directory", as if /proc were missing.
    assert unwritable_folder(Path("/proc/nope")) == ("--out /proc/nope is not writable: a file cannot be created in "
                                                     "/proc (No such file or directory)")


def test_a_broken_link_is_named_before_any_work(tmp_path):
    """A link to nowhere read as "does not exist yet" (its parent was probed), and mkdir raised
    FileExistsError on it after the scene was built."""
    (tmp_path / "frames").symlink_to(tmp_path / "nowhere")
    assert unwritable_folder(tmp_path / "frames") == (f"--out {tmp_path / 'frames'} is a broken link "
                                                     f"({tmp_path / 'frames'} -> {tmp_path / 'nowhere'})")
    assert unwritable_folder(tmp_path / "frames" / "sub").startswith(f"--out {tmp_path / 'frames' / 'sub'} is a broken link")
    (tmp_path / "nowhere").mkdir()
    assert unwritable_folder(tmp_path / "frames") is None       # the link leads somewhere now


def test_a_name_the_system_refuses_is_one_line_not_a_traceback(tmp_path):
    """``Path.exists`` raises ``OSError: [Errno 36] File name too long`` (both examples' --out: a traceback)."""
    long = tmp_path / ("a" * 300)
    for folder in (long, long / "sub"):
        assert unwritable_folder(folder) == f"--out {folder} cannot be used: File name too long"
