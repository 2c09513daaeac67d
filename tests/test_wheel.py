"""A wheel built from the repository installs the rules and runs every verb from any folder.

The wheel is built from a copy of the sources and installed (not editable) into a fresh
virtual environment; its dependencies (torch among them) are this environment's, reached
through a `.pth` file appended after the fresh site-packages, so the installed torchtop is
the one imported (checked) and nothing is downloaded. Every command then runs in an empty
folder, far from the checkout, whose `rules/` must not be what is found. The copy's version
gets a local tag, so `--version` is seen to come from the installed metadata.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RESNET_NW0, SHARED

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
BUILT_FROM = ("pyproject.toml", "README.md", "src", "rules")
LOCAL_TAG = "+wheeltest"
TINY_STEPS = 60
TINY_JOB = f"""
import torch
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Linear(16, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
data = TensorDataset(torch.randn({TINY_STEPS * 8}, 16), torch.randn({TINY_STEPS * 8}, 4))
steps = 0
for x, y in DataLoader(data, batch_size=8):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
    steps += 1
print("steps", steps, flush=True)
"""


@dataclass(frozen=True)
class Installed:
    venv: Path
    workdir: Path
    version: str
    wheel: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TORCHTOP_RULES")}
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.venv)
        return subprocess.run(
            [str(self.venv / "bin" / "torchtop"), *args],
            cwd=self.workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def build_wheel(source: Path, out: Path) -> Path:
    """`pip wheel` without isolation where this environment can build it (no download), else
    with it, as `pip install .` would."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        isolated = int(version("setuptools").split(".")[0]) < 77
    except PackageNotFoundError:
        isolated = True
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out)]
    command += [] if isolated else ["--no-build-isolation"]
    subprocess.run([*command, str(source)], check=True, timeout=300)
    (wheel,) = out.glob("torchtop-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    for name in BUILT_FROM:
        if (REPO / name).is_dir():
            caches = shutil.ignore_patterns("__pycache__", "*.egg-info")
            shutil.copytree(REPO / name, source / name, ignore=caches)
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    pyproject = source / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace(f'version = "{version}"', f'version = "{version}{LOCAL_TAG}"')
    )
    wheel = build_wheel(source, root / "dist")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--no-deps", "--no-index", "-q", str(wheel)],
        check=True, timeout=300,
    )  # fmt: skip
    fresh_site = next((venv / "lib").glob("python3*/site-packages"))
    # After the fresh site-packages: the dependencies, never this checkout's editable torchtop
    # (its own .pth is not read from a folder a .pth adds).
    (fresh_site / "zz_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    workdir = root / "elsewhere"
    workdir.mkdir()
    yield Installed(venv, workdir, version + LOCAL_TAG, wheel)


def test_the_installed_package_is_imported_and_its_version_comes_from_its_metadata(
    installed: Installed,
) -> None:
    where = subprocess.run(
        [str(installed.python), "-c", "import torchtop; print(torchtop.__file__)"],
        cwd=installed.workdir, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert Path(where).is_relative_to(installed.venv)
    result = installed.run("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"torchtop {installed.version}"


def test_rules_are_read_from_the_installed_share_folder(installed: Installed) -> None:
    result = installed.run("rules", "--format", "json")
    assert result.returncode == 0, result.stderr
    rules = json.loads(result.stdout)["rules"]
    shipped = {p.stem for p in (REPO / "rules").glob("*.toml") if not p.stem.startswith("_")}
    assert {rule["id"] for rule in rules} == shipped
    share = installed.venv / "share" / "torchtop" / "rules"
    assert all(Path(rule["path"]).parent == share for rule in rules)
    assert installed.run("rules", "dataloader").returncode == 0


def test_a_target_install_reads_the_rules_it_put_beside_the_package(
    installed: Installed, tmp_path: Path
) -> None:
    # `pip install --target DIR` (how the GPU kit installs torchtop beside an image's torch)
    # puts the data files in DIR/share, not under the interpreter's prefix.
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
         "--target", str(target), str(installed.wheel)],
        check=True, timeout=300,
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "TORCHTOP_RULES"}
    env["PYTHONPATH"] = str(target)
    result = subprocess.run(
        [sys.executable, "-m", "torchtop", "rules", "--format", "json"],
        cwd=installed.workdir, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    share = target / "share" / "torchtop" / "rules"
    assert all(Path(rule["path"]).parent == share for rule in json.loads(result.stdout)["rules"])


def test_analyze_gives_the_sample_traces_expected_verdict(installed: Installed) -> None:
    expected = tomllib.loads((REPO / "sample_traces" / "expected.toml").read_text())
    case = expected["dataloader_starved"]
    trace = REPO / "sample_traces" / case["path"]
    result = installed.run("analyze", str(trace), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["bottleneck"] == case["bottleneck"]
    bad = installed.run("analyze", "missing.json")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_analyze_reads_a_real_gpu_trace_as_the_checkout_does(installed: Installed) -> None:
    trace = SHARED / RESNET_NW0
    if not trace.exists():
        pytest.skip(f"{trace} is not here (the shared GPU traces)")
    from_wheel = installed.run("analyze", str(trace), "--format", "json")
    assert from_wheel.returncode == 0, from_wheel.stderr
    from_checkout = subprocess.run(
        [sys.executable, "-m", "torchtop", "analyze", str(trace), "--format", "json"],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert json.loads(from_wheel.stdout) == json.loads(from_checkout.stdout)


def test_demo_headless_runs_the_packaged_job_and_finds_its_planted_bottleneck(
    installed: Installed,
) -> None:
    # No --for: headless, the demo stops by itself after its 30 s.
    result = installed.run("demo", "--headless", "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["source"]["kind"] == "demo"
    assert report["steps"]["count"] > 0 and report["bottleneck"] == "dataloader"
    # The run folder is made where the user stands, not in the checkout.
    (run_dir,) = (installed.workdir / "torchtop-runs").iterdir()
    assert json.loads((run_dir / "report.json").read_text()) == report


def test_run_headless_watches_a_tiny_training_script_with_the_agent_inside(
    installed: Installed,
) -> None:
    script = installed.workdir / "tiny.py"
    script.write_text(TINY_JOB)
    run_dir = installed.workdir / "tiny-run"
    result = installed.run(
        "run", "--headless", "--run-dir", str(run_dir), "--", "python", "tiny.py"
    )
    assert result.returncode == 0, result.stderr
    # The job's own output, on the terminal's stderr: stdout is the report.
    assert f"steps {TINY_STEPS}" in result.stderr and f"steps {TINY_STEPS}" not in result.stdout
    report = json.loads((run_dir / "report.json").read_text())
    assert report["notes"].count("steps marked by optimizer.step() calls") == 1
    assert 0 < report["steps"]["count"] <= TINY_STEPS
    watched = installed.run("watch", str(run_dir), "--headless", "--format", "json")
    assert watched.returncode == 0, watched.stderr
    assert json.loads(watched.stdout)["steps"]["count"] == report["steps"]["count"]


def test_attach_watches_a_process_it_did_not_start_and_leaves_it_running(
    installed: Installed,
) -> None:
    target = subprocess.Popen([str(installed.python), "-c", "import time; time.sleep(60)"])
    try:
        result = installed.run(
            "attach", str(target.pid), "--headless", "--for", "2", "--format", "json",
            "--run-dir", str(installed.workdir / "attached"),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["source"]["pid"] == target.pid
        assert target.poll() is None
    finally:
        target.kill()
        target.wait()


def test_tune_says_in_one_line_when_a_job_cannot_be_measured(installed: Installed) -> None:
    result = installed.run(
        "tune", "--for", "20", "--run-dir", str(installed.workdir / "tuned"),
        "--", "python", "-c", "print('no steps here')",
    )  # fmt: skip
    assert result.returncode == 2
    (said,) = [line for line in result.stderr.splitlines() if "could not be measured" in line]
    assert said.startswith("torchtop tune: the job could not be measured as given")
