"""The caller's package-manager configuration as the etalon's setup gets it: the user files pip,
uv and npm read, the local paths they name, and a record of names only. No environment variable
is read (core concepts)."""

from __future__ import annotations

from agentab.run.package_config import caller_package_config


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
    config = caller_package_config(home, home_inside="/tmp")
    assert config.mounts == {
        home / ".config" / "pip" / "pip.conf": "/tmp/.config/pip/pip.conf",
        home / ".npmrc": "/tmp/.npmrc",
        wheels: str(wheels),
        bundle: str(bundle),
    }
    assert config.record() == {"files": ["~/.config/pip/pip.conf", "~/.npmrc"]}


def test_a_configuration_never_hands_over_the_machine_or_the_home(tmp_path):
    home = tmp_path / "home"
    (home / ".pip").mkdir(parents=True)
    (home / ".pip" / "pip.conf").write_text(
        f"[global]\nfind-links = / {tmp_path} {home} /etc/ssl /proc/self /usr/lib\n"
        "extra-index-url = file:///nowhere/at/all\n"
    )
    config = caller_package_config(home)
    assert list(config.mounts.values()) == ["/tmp/.pip/pip.conf"]


def test_without_files_setup_gets_nothing(tmp_path):
    assert caller_package_config(tmp_path).record() == {"files": []}
