"""Small file helpers shared by the steps: an exclusive lock, an atomic JSON write, a seal.

A sealed JSON file ends with `"seal"`: an HMAC, keyed by the results folder's secret, of the
file's text without that line. agentab writes run.json, each validator's output and
measures.json sealed; a file edited after it was written (by a person, a tool, a process left
behind) no longer carries a seal that holds, and nothing confined can read the secret to make
one. Checking a seal needs the text only, not a parse: the synthesis of 10 000 runs checks
every measures.json for the cost of a hash.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path


@contextmanager
def exclusive_lock(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on lock_file: parallel jobs asking for one shared thing
    (a mirror, a harness install) wait while one of them makes it."""
    lock_file = Path(lock_file)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_json(data: dict, path: Path) -> None:
    """Write atomically: a killed job leaves the old file or none, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    text = escaped_surrogates(json.dumps(data, indent=2, ensure_ascii=False))
    partial.write_text(text + "\n", encoding="utf-8")
    partial.replace(path)


def write_jsonl(lines, path: Path, max_bytes: int | None = None) -> bool:
    """One JSON object a line, written atomically; the lines past `max_bytes` are not written
    (a run's transcript is bounded as it is written). Returns whether some were left out."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    written, cut = 0, False
    with partial.open("w", encoding="utf-8") as out:
        for line in lines:
            text = escaped_surrogates(json.dumps(line, ensure_ascii=False)) + "\n"
            size = len(text.encode("utf-8"))
            if max_bytes is not None and written + size > max_bytes:
                cut = True
                break
            out.write(text)
            written += size
    partial.replace(path)
    return cut


def read_json_lines(path: Path) -> list[dict]:
    """The JSON objects of a file, one a line, in order; a line that is not one is skipped, and
    a file that cannot be read is empty (a run's files are its agent's: none is trusted whole)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return []
    found = []
    for line in data.split(b"\n"):
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(entry, dict):
            found.append(entry)
    return found


_SURROGATE = re.compile("[\ud800-\udfff]")
# What git's C-quoting escapes by name (quote_c_style); other control bytes are octal.
_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f",
              "\r": "\\r", '"': '\\"', "\\": "\\\\"}  # fmt: skip
_NEEDS_QUOTING = re.compile('[\x00-\x1f\x7f"\\\\\ud800-\udfff]')


def shown_path(name: str) -> str:
    """A file name as a person reads it on one line, whatever its bytes: as it is when it is
    plain, else quoted as git quotes it (`"a\\nb"`, a byte that is not UTF-8 as `\\377`), so a
    newline never splits it and a byte that is not text never crashes a write. `name` holds
    such bytes as surrogates (`os.fsdecode`, git's -z output decoded with surrogateescape)."""
    if not _NEEDS_QUOTING.search(name):
        return name
    out = []
    for char in name:
        if char in _C_ESCAPES:
            out.append(_C_ESCAPES[char])
        elif "\udc80" <= char <= "\udcff":
            out.append(f"\\{ord(char) - 0xDC00:03o}")
        elif char < " " or char == "\x7f" or "\ud800" <= char <= "\udfff":
            out.append("".join(f"\\{byte:03o}" for byte in char.encode("utf-8", "surrogatepass")))
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def escaped_surrogates(text: str) -> str:
    """JSON text whose lone surrogates (a file name's bytes that are not UTF-8, decoded with
    surrogateescape) are written as `\\udcXX` escapes: valid UTF-8 that reads back the same,
    where writing them raw would crash."""
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


SEAL_KEY = "seal"
_SEAL_LINE = re.compile(r',\n  "seal": "([0-9a-f]{64})"\n\}\n?$')


def seal_of(text: str, secret: str) -> str:
    return hmac.new(secret.encode(), text.encode("utf-8"), hashlib.sha256).hexdigest()


def sealed_text(data: dict, secret: str) -> str:
    """`data` as agentab writes JSON, with its seal as the last key."""
    body = escaped_surrogates(
        json.dumps({k: v for k, v in data.items() if k != SEAL_KEY}, indent=2, ensure_ascii=False)
    )
    if body == "{}":
        body = "{\n}"
    return f'{body[:-2]},\n  "{SEAL_KEY}": "{seal_of(body, secret)}"\n}}\n'


def seal_holds(text: str, secret: str) -> bool:
    """Whether `text` is a sealed file exactly as agentab wrote it with this secret."""
    found = _SEAL_LINE.search(text)
    if found is None:
        return False
    body = text[: found.start()] + "\n}"
    return hmac.compare_digest(found.group(1), seal_of(body, secret))


def write_sealed_json(data: dict, path: Path, secret: str) -> None:
    """`write_json`, sealed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(sealed_text(data, secret), encoding="utf-8")
    partial.replace(path)


def read_bytes(path: str) -> bytes:
    """A whole file, read without io's buffered file object: a third less time a file when a
    synthesis reads 10 000 of them. Errors are open()'s, the path named."""
    handle = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        parts = []
        while chunk := os.read(handle, READ_CHUNK):
            parts.append(chunk)
        return b"".join(parts)
    except OSError as error:  # a folder opens, and fails at its first read
        raise OSError(error.errno, error.strerror, path) from None
    finally:
        os.close(handle)


READ_CHUNK = 1 << 16


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def folder_file_hashes(folder: Path, exclude: set[str]) -> dict[str, str]:
    """The sha256 of every file directly in `folder` (not its subfolders, not `exclude`, not a
    `.partial` being written): what a run left, told apart from a later change by content."""
    return {
        path.name: file_sha256(path)
        for path in sorted(Path(folder).iterdir())
        if path.is_file() and path.name not in exclude and not path.name.endswith(".partial")
    }


def results_secret(path: Path) -> str:
    """The results folder's secret, made on first use: opaque ids and seals are keyed on it.
    Nothing confined can read it (docs/confinement.md)."""
    path = Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{secrets.token_hex(4)}.partial")
        partial.write_text(secrets.token_hex(16) + "\n")
        try:
            partial.rename(path) if not path.exists() else partial.unlink()
        except OSError:
            partial.unlink(missing_ok=True)
    return path.read_text().strip()


@contextmanager
def open_inside(root: Path, relative: str, flags: int, mode: int = 0o644):
    """Open `root/relative` (as a binary file object) without following a symbolic link at any
    step below `root`: a confined process wrote that tree, and a link it made must never carry
    a write of agentab's (which runs as the caller, often root) out of it. Missing folders on
    the way are made; a link or a non-folder on the way is an error (OSError)."""
    parts = [part for part in Path(relative).parts if part not in ("", ".")]
    if not parts or ".." in parts or Path(relative).is_absolute():
        raise ValueError(f"{relative!r} is not a path inside a tree")
    folder = folder_inside(root, "/".join(parts[:-1]), make=True)
    try:
        fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
    finally:
        os.close(folder)
    with os.fdopen(
        fd, "r+b" if flags & os.O_RDWR else ("wb" if flags & os.O_WRONLY else "rb")
    ) as handle:
        yield handle


def write_inside(root: Path, relative: str, data: bytes, mode: int = 0o644) -> None:
    """Write a file at `root/relative` in a tree a confined process wrote: whatever stood
    there (a file, a link) is replaced, and no link on the way is followed."""
    parent, _, name = str(relative).rpartition("/")
    partial = f".agentab-{secrets.token_hex(6)}.partial"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    with open_inside(root, f"{parent}/{partial}" if parent else partial, flags, mode) as handle:
        handle.write(data)
    folder = folder_inside(root, parent)
    try:
        os.replace(partial, name, src_dir_fd=folder, dst_dir_fd=folder)
    finally:
        os.close(folder)


def folder_inside(root: Path, relative: str, make: bool = False) -> int:
    """A descriptor of the folder `root/relative`, reached without following a link (OSError
    when a step is a link or not a folder); missing folders made when `make`."""
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in [p for p in Path(relative).parts if p not in ("", ".")]:
            if make:
                with suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=folder)
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
    except BaseException:
        os.close(folder)
        raise
    return folder
