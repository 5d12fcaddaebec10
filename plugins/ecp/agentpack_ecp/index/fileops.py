"""Copying index files: byte ranges and whole files in the kernel where it can, trees as hard links."""

from __future__ import annotations

import os
from pathlib import Path


def copy_range(fin, fout, start: int, end: int) -> None:
    """Append bytes ``start:end`` of the open file ``fin`` to ``fout`` (in the kernel where it can)."""
    fout.flush()
    done = start
    try:
        while done < end:
            n = os.copy_file_range(fin.fileno(), fout.fileno(), end - done, done)
            if n == 0:
                break
            done += n
    except (AttributeError, OSError):
        pass
    if done < end:
        fin.seek(done)
        fout.write(fin.read(end - done))


def copy_file(src: Path, dst: Path) -> None:
    """A real copy (never a hard link: the copy is modified), with ``copy_file_range`` so filesystems
    that can share extents (btrfs, XFS) make it a reflink."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        size = os.fstat(fin.fileno()).st_size
        try:
            done = 0
            while done < size:
                n = os.copy_file_range(fin.fileno(), fout.fileno(), size - done)
                if n == 0:
                    break
                done += n
            if done == size:
                return
        except (AttributeError, OSError):
            pass
        fin.seek(0)
        fout.seek(0)
        fout.truncate()
        import shutil  # only where the kernel copy is refused; a query imports this module and never copies

        shutil.copyfileobj(fin, fout, 1 << 20)


def link_tree(src: Path, dst: Path) -> None:
    """``dst`` as a tree of hard links to the files of ``src`` (copies where linking fails).

    Used for an index whose sources did not change: nothing of an index is modified in place, so the
    staged and the published index may share their files.
    """
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            try:
                os.link(Path(dirpath) / name, dst / rel / name)
            except OSError:
                import shutil

                shutil.copy2(Path(dirpath) / name, dst / rel / name)
