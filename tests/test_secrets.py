"""Secrets stay out of sight: a Neo4j elsewhere has no default password, a password can come
from a file, and the Neo4j the tests and ``make neo4j`` start is never given its password on
a command line (which every user of the machine sees in ``ps``)."""

import subprocess
import sys
from pathlib import Path

import pytest

from ragkit.config import Settings
from ragkit.errors import InputError
from ragkit.stores.neo4j import DEFAULT_PASSWORD, default_password

from .conftest import NEO4J_PASSWORD, ROOT


@pytest.mark.parametrize("uri", ["bolt://127.0.0.1:7687", "neo4j://localhost:7687", "bolt://[::1]:7687"])
def test_a_neo4j_on_this_machine_has_the_launchers_default_password(uri):
    assert default_password(uri) == DEFAULT_PASSWORD


@pytest.mark.parametrize("uri", ["bolt://db.example:7687", "neo4j+s://10.0.0.5:7687", "bolt://0.0.0.0:7687"])
def test_a_neo4j_elsewhere_has_no_default_password(uri):
    with pytest.raises(InputError, match=r"^store .*: a Neo4j beyond this machine needs its password in "
                                         r"NEO4J_PASSWORD or a file named by NEO4J_PASSWORD_FILE"):
        default_password(uri)


def test_the_cli_says_so_in_one_line_before_connecting(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-m", "ragkit.cli", "ask", "What does Aspirin treat?", "--pipeline", "kg",
                          "--store", "bolt://db.example:7687", "--no-llm"], capture_output=True, text=True,
                         timeout=120, env=env, cwd=ROOT)
    assert out.returncode == 3 and out.stdout == "" and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("ragkit: error: store bolt://db.example:7687: a Neo4j beyond this machine needs")


def test_a_password_file_is_read_and_a_missing_one_named(tmp_path):
    secret = tmp_path / "neo4j-password"
    secret.write_text("from-a-mounted-secret\n")
    assert Settings.from_env({"NEO4J_PASSWORD_FILE": str(secret)}).neo4j_password == "from-a-mounted-secret"
    assert Settings.from_env({"NEO4J_PASSWORD_FILE": str(secret), "NEO4J_PASSWORD": "given"}).neo4j_password == "given"
    with pytest.raises(InputError, match=r"^NEO4J_PASSWORD_FILE: cannot read .*missing"):
        Settings.from_env({"NEO4J_PASSWORD_FILE": str(tmp_path / "missing")})
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(InputError, match=r"^NEO4J_PASSWORD_FILE: .*empty is empty"):
        Settings.from_env({"NEO4J_PASSWORD_FILE": str(tmp_path / "empty")})


@pytest.mark.slow
def test_the_launched_neo4j_has_no_password_on_its_command_line(neo4j_uri):
    port = neo4j_uri.rsplit(":", 1)[1]
    launched = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"ragkit.neo4j.Launcher" in argv and port.encode() in argv:
            launched.append(argv)
    assert launched, "the launcher's process was not found"
    assert all(NEO4J_PASSWORD.encode() not in arg and DEFAULT_PASSWORD.encode() not in arg
               for argv in launched for arg in argv)


def test_make_neo4j_puts_no_password_on_the_command_line():
    recipe = subprocess.run(["make", "-n", "neo4j"], capture_output=True, text=True, cwd=ROOT,
                            env={"PATH": "/usr/bin:/bin", "NEO4J_PASSWORD": "visible-if-passed"}).stdout
    java = [line for line in recipe.splitlines() if "ragkit.neo4j.Launcher" in line]
    assert java and all("visible-if-passed" not in line and DEFAULT_PASSWORD not in line for line in java)
