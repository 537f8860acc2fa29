"""The judge's material: a patch split per file at its own `diff --git` lines (paths checked
against what git itself lists with -z), a diff budget shared per file, and a boundary the
material cannot hold."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentab.validators import judge_material
from agentab.validators.judge_material import (
    MAX_DIFF_CHARS,
    FileDiff,
    new_boundary,
    shares,
    shown_diff,
    split_patch,
)

GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def git(folder: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=folder, env=GIT_ENV, check=True, capture_output=True
    ).stdout


@pytest.fixture
def changed(tmp_path: Path) -> Path:
    """A repository whose work tree changes files of every kind a patch names differently."""
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q")
    for name, text in {
        "calc.py": "x = 1\n",
        "old name.py": "moved = True\n" * 20,
        "gone.py": "bye\n",
        "mode.sh": "echo\n",
        "x b/y.txt": "tricky\n",  # its header reads `diff --git a/x b/y.txt b/x b/y.txt`
    }.items():
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(text)
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "start")
    (folder / "calc.py").write_text("x = 2\n")
    (folder / "test_é.py").write_text("import os\nos._exit(0)\n")
    (folder / 'quote"d\\name.py').write_text("q\n")
    (folder / "old name.py").rename(folder / "new name.py")
    (folder / "gone.py").unlink()
    (folder / "mode.sh").chmod(0o755)
    (folder / "empty.txt").write_text("")
    (folder / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (folder / "x b/y.txt").write_text("changed\n")
    git(folder, "add", "-A")
    return folder


def test_every_file_of_a_git_patch_is_found_with_its_path_as_git_lists_it(changed):
    patch = git(changed, "diff", "--cached", "--binary", "-M", "HEAD").decode()
    assert '"b/test_\\303\\251.py"' in patch  # git quoted the path: the case to get right
    listed = git(changed, "diff", "--cached", "--name-only", "-z", "-M", "HEAD")
    expected = [name.decode() for name in listed.split(b"\0") if name]
    files = split_patch(patch)
    assert [file.path for file in files] == expected
    assert "".join(file.header + file.body for file in files) == patch  # nothing lost
    assert all(file.header.startswith("diff --git ") for file in files)
    binary = next(file for file in files if file.path == "blob.bin")
    assert binary.body.startswith("GIT binary patch")


def test_a_line_of_content_that_reads_like_a_header_does_not_start_a_file():
    patch = (
        "diff --git a/notes.md b/notes.md\n--- a/notes.md\n+++ b/notes.md\n@@ -1 +1,3 @@\n"
        "-old\n+diff --git a/fake b/fake\n++++ b/fake\n+new\n"
    )
    [only] = split_patch(patch)
    assert only.path == "notes.md" and "fake" in only.body


def test_a_patch_not_made_by_git_is_one_part_with_no_header():
    patch = "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    assert split_patch(patch) == [FileDiff("", "", patch)]


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=12), st.integers(0, 30_000))
def test_the_budget_is_shared_with_the_largest_files_cut_first(sizes, budget):
    given_ = shares(sizes, budget)
    assert sum(given_) <= budget
    assert all(0 <= g <= s for g, s in zip(given_, sizes, strict=True))
    cut = [g for g, s in zip(given_, sizes, strict=True) if g < s]
    whole = [s for g, s in zip(given_, sizes, strict=True) if g == s]
    # A file is cut only when its share is no more than any other file's, and no smaller file
    # is cut while a larger one is whole.
    if cut:
        assert max(whole, default=0) <= min(cut) + 1
        assert max(cut) - min(cut) <= 1


def file(path: str, lines: int, width: int = 60) -> str:
    body = "".join(f"+{'x' * width}\n" for _ in range(lines))
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{lines} @@\n{body}"
    )


def test_one_huge_file_cannot_keep_the_others_from_the_judge():
    quoted = file("test_é.py", 3).replace("a/test_é.py", '"a/test_\\303\\251.py"')
    quoted = quoted.replace("b/test_é.py", '"b/test_\\303\\251.py"')
    patch = file("a_huge.txt", 20_000) + file("calc.py", 5) + quoted + file("z.md", 40)
    shown = shown_diff(patch, "agentab-b0undary", budget=50_000)
    assert len(shown.text) <= 50_000
    assert shown.cut == 1 and shown.files == 4
    for name in ("a/a_huge.txt", "a/calc.py", '"a/test_\\303\\251.py"', "a/z.md"):
        assert f"diff --git {name}" in shown.text
    for small in (file("calc.py", 5), quoted, file("z.md", 40)):
        assert small in shown.text  # whole
    assert "<<<agentab-b0undary CUT:" in shown.text
    marker = shown.text.index("<<<agentab-b0undary CUT:")
    assert marker < shown.text.index("diff --git a/calc.py")  # said where it happened


def test_the_budget_holds_with_every_files_cut_said_and_counted():
    files = [file(f"big{n}.txt", 400) for n in range(30)]
    shown = shown_diff("".join(files), "agentab-b", budget=20_000)
    assert len(shown.text) <= 20_000 and shown.cut == 30
    for whole in files:
        header, body = whole.split("@@ -0,0", 1)
        start = shown.text.index(header) + len(header)
        kept, said = shown.text[start:].split("<<<agentab-b CUT: ", 1)
        omitted = int(said.split(" ", 1)[0])
        assert len(kept) + omitted == len(body) + len("@@ -0,0")  # what was cut, exactly


def test_headers_alone_over_the_budget_are_shown_by_their_first_line_the_rest_counted():
    patch = "".join(file(f"f{n}.txt", 1) for n in range(50))
    shown = shown_diff(patch, "agentab-b", budget=1000)
    assert len(shown.text) <= 1000 and "new file mode" not in shown.text
    named = shown.text.count("diff --git ")
    assert 0 < named < 50 and shown.unnamed == 50 - named
    assert f"CUT: {50 - named} more files" in shown.text


def empty_file(path: str) -> str:
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..e69de29\n"


def test_many_empty_files_with_long_names_keep_neither_the_budget_nor_the_real_change():
    """1 572 empty files with long names made a 784 060-character diff against the 400 000
    promised, and the one real change's content was not in it."""
    names = [f"pkg/{'n' * 240}{number}.py" for number in range(1572)]
    real = file("calc.py", 3)
    patch = "".join(map(empty_file, names[:900])) + real + "".join(map(empty_file, names[900:]))
    assert len(patch) > MAX_DIFF_CHARS
    shown = shown_diff(patch, "agentab-b")
    assert len(shown.text) <= MAX_DIFF_CHARS
    assert shown.text.startswith(real)  # the real change first, its content whole
    assert 0 < shown.unnamed < 1572 and shown.text.count("diff --git ") == 1573 - shown.unnamed
    omitted = sum(len(empty_file(name)) for name in names if f"a/{name} " not in shown.text)
    assert shown.text.splitlines()[-1] == (
        f"<<<agentab-b CUT: {shown.unnamed} more files, {omitted} characters of the diff, are "
        "not shown (not even their names)>>>"
    )


def test_the_boundary_is_never_one_the_material_holds(monkeypatch):
    drawn = iter(["0" * 32, "1" * 32])
    monkeypatch.setattr(judge_material.secrets, "token_hex", lambda size: next(drawn))
    material = ["the agent guessed agentab-" + "0" * 32]
    assert new_boundary(material) == "agentab-" + "1" * 32
