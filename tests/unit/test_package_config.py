"""The caller's package-manager configuration as the etalon's setup gets it: the user files pip,
uv and npm read, the local paths they name, and a record of names only. No environment variable
is read (core concepts)."""

from __future__ import annotations

import hashlib

from agentab.run.environments import environment_key
from agentab.run.package_config import caller_package_config, system_package_config
from agentab.run.setup import copied_log


def test_setup_gets_the_package_managers_files_by_name(tmp_path):
    home = tmp_path / "home"
    (home / ".config" / "pip").mkdir(parents=True)
    wheels, bundle = tmp_path / "wheels", tmp_path / "ca.pem"
    wheels.mkdir()
    bundle.write_text("cert")
    (home / ".config" / "pip" / "pip.conf").write_text(
        f"[global]\nfind-links = {wheels}\ncert = {bundle}\n"
        "index-url = https://user:token@mirror.example/simple\n"
    )
    (home / ".npmrc").write_text("//registry.example/:_authToken=secret\n")
    config = caller_package_config(home, home_inside="/tmp", system=tmp_path / "root")
    assert config.mounts == {
        home / ".config" / "pip" / "pip.conf": "/tmp/.config/pip/pip.conf",
        home / ".npmrc": "/tmp/.npmrc",
        wheels: str(wheels),
        bundle: str(bundle),
    }
    assert config.record() == {
        "files": ["~/.config/pip/pip.conf", "~/.npmrc"],
        "sha256": {
            "~/.config/pip/pip.conf": sha256(home / ".config" / "pip" / "pip.conf"),
            "~/.npmrc": sha256(home / ".npmrc"),
        },
    }


def test_a_configuration_never_hands_over_the_machine_or_the_home(tmp_path):
    home = tmp_path / "home"
    (home / ".pip").mkdir(parents=True)
    (home / ".pip" / "pip.conf").write_text(
        f"[global]\nfind-links = / {tmp_path} {home} /etc/ssl /proc/self /usr/lib\n"
        "extra-index-url = file:///nowhere/at/all\n"
    )
    config = caller_package_config(home, system=tmp_path / "root")
    assert list(config.mounts.values()) == ["/tmp/.pip/pip.conf"]


def test_without_files_setup_gets_nothing(tmp_path):
    empty = tmp_path / "root"
    assert caller_package_config(tmp_path, system=empty).record() == {"files": [], "sha256": {}}


def test_the_machines_files_are_read_too_and_recorded_by_name_and_hash(tmp_path):
    # pip reads /etc/pip.conf whatever the user's home holds; npm its prefix's etc/npmrc.
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "usr" / "local" / "etc").mkdir(parents=True)
    (root / "etc" / "pip.conf").write_text("[global]\nindex-url = https://mirror.example/simple\n")
    (root / "usr" / "local" / "etc" / "npmrc").write_text("registry=https://npm.example/\n")
    config = caller_package_config(tmp_path / "home", system=root)
    assert config.record() == {
        "files": ["/etc/pip.conf", "/usr/local/etc/npmrc"],
        "sha256": {
            "/etc/pip.conf": sha256(root / "etc" / "pip.conf"),
            "/usr/local/etc/npmrc": sha256(root / "usr" / "local" / "etc" / "npmrc"),
        },
    }
    # A confined setup's /etc is agentab's: pip.conf is bound at its own path; /usr is there.
    assert config.mounts == {root / "etc" / "pip.conf": "/etc/pip.conf"}
    # Unconfined, setup reads them where they are: recorded, nothing to bind.
    unconfined = system_package_config(root)
    assert unconfined.record() == config.record() and unconfined.mounts == {}
    # Another index: another hash, so another environment (run/environments.py).
    (root / "etc" / "pip.conf").write_text("[global]\nindex-url = https://other.example/\n")
    changed = system_package_config(root).record()["sha256"]
    assert changed["/etc/pip.conf"] != config.record()["sha256"]["/etc/pip.conf"]
    sha = "0" * 40
    assert environment_key(sha, ("x",), (), changed) != environment_key(
        sha, ("x",), (), config.record()["sha256"]
    )


def test_what_a_local_index_links_to_is_handed_over_with_it(tmp_path):
    # A PEP 503 index on disk: its pages under simple/, its files in a sibling folder, and a
    # file kept elsewhere behind a symbolic link; pip fetches each at the link's own path.
    home, pypi, elsewhere = tmp_path / "home", tmp_path / "pypi", tmp_path / "store"
    (home / ".config" / "pip").mkdir(parents=True)
    (pypi / "simple" / "pygments").mkdir(parents=True)
    (pypi / "files").mkdir()
    elsewhere.mkdir()
    (elsewhere / "six-1.0-py3-none-any.whl").write_bytes(b"wheel")
    (pypi / "files" / "six-1.0-py3-none-any.whl").symlink_to(elsewhere / "six-1.0-py3-none-any.whl")
    (pypi / "simple" / "index.html").write_text('<a href="pygments/">pygments</a>')
    (pypi / "simple" / "pygments" / "index.html").write_text(
        '<a href="../../files/pygments-2.0-py3-none-any.whl#sha256=00">pygments</a>\n'
        '<a href="https://files.example/pygments-1.0.tar.gz">remote</a>\n'
        '<a href="../../files/six-1.0-py3-none-any.whl">six</a>\n'
        "<a href='file:///' >the machine</a>\n"
    )
    (home / ".config" / "pip" / "pip.conf").write_text(
        f"[global]\nextra-index-url = file://{pypi / 'simple'}\n"
    )
    config = caller_package_config(home, system=tmp_path / "root")
    assert set(config.mounts) == {
        home / ".config" / "pip" / "pip.conf",
        pypi / "simple",
        pypi / "files",
        elsewhere,
    }
    assert config.mounts[pypi / "files"] == str(pypi / "files")


def test_a_mirror_whose_files_lie_in_a_folder_each_is_bound_once(tmp_path):
    # A bandersnatch mirror: web/simple/<project>/ links to web/packages/<h>/<h>/<hash>/<file>.
    home, web = tmp_path / "home", tmp_path / "mirror" / "web"
    (home / ".pip").mkdir(parents=True)
    links = []
    for index, name in enumerate(("attrs", "six", "idna")):
        (web / "simple" / name).mkdir(parents=True)
        folder = web / "packages" / f"{index:02x}" / "1b" / f"{index}cafe"
        folder.mkdir(parents=True)
        (folder / f"{name}-1.0.tar.gz").write_bytes(b"sdist")
        links.append(f"../../packages/{index:02x}/1b/{index}cafe/{name}-1.0.tar.gz")
        (web / "simple" / name / "index.html").write_text(f'<a href="{links[-1]}">{name}</a>')
    (home / ".pip" / "pip.conf").write_text(f"[global]\nindex-url = file://{web / 'simple'}\n")
    config = caller_package_config(home, system=tmp_path / "root")
    assert set(config.mounts) == {home / ".pip" / "pip.conf", web / "simple", web / "packages"}


def test_a_copied_setups_log_says_its_own_time(tmp_path):
    earlier = {"seconds": 10.836, "created": [".venv", "x.egg-info"]}
    log = copied_log(earlier, "a" * 40, 0.25)
    assert log.startswith(
        "setup not run here: copied in 0.25s what it made in an earlier checkout of aaaaaaaaaaaa: "
        ".venv, x.egg-info"
    )
    assert log.count("10.836") == 1 and log.endswith("(that setup ran in 10.836s)\n")


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()
