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
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
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
    partial.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.replace(path)


def write_jsonl(lines: list[dict], path: Path) -> None:
    """One JSON object a line, written atomically."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


SEAL_KEY = "seal"
_SEAL_LINE = re.compile(r',\n  "seal": "([0-9a-f]{64})"\n\}\n?$')


def seal_of(text: str, secret: str) -> str:
    return hmac.new(secret.encode(), text.encode("utf-8"), hashlib.sha256).hexdigest()


def sealed_text(data: dict, secret: str) -> str:
    """`data` as agentab writes JSON, with its seal as the last key."""
    body = json.dumps(
        {k: v for k, v in data.items() if k != SEAL_KEY}, indent=2, ensure_ascii=False
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


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


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
