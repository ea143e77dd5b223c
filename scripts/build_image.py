"""Build the operator's OCI image without Docker: `make image` runs this.

The image is two layers, assembled with `umoci` from what Debian and PyPI serve:

1. base: Debian bookworm's `python3` and `ca-certificates` with their dependencies, unpacked by
   `mmdebstrap --variant=extract` (no maintainer scripts run, so no shell, apt, dpkg or perl
   land in the image), the CA bundle concatenated, the standard library byte-compiled by the
   image's own interpreter, a `nonroot` user 65532 and a dpkg `status.d/` listing the
   packages for scanners. Cached under `<cache>/image/base-<key>/`.
2. app: the runtime dependencies from `requirements/runtime.lock` (every file checked against
   its hash, binary wheels only, installed by the build machine's pip into the image's
   `/usr/local/lib/python3.11/dist-packages`), the operator's wheel (`maturin build --release
   --locked`: the operator, the hashing module and the `cliques` command's core), byte-compiled,
   and `/usr/local/bin/cliques`. Compilers, cargo, pip and their caches stay on the build
   machine, and so does cliques-lab (lab/: the dev cluster, the demo, the benchmarks): the
   build fails if any of it reached the image (`lab_files`).

The config runs `/usr/local/bin/cliques` as 65532:65532. The result is an OCI layout tarred
into `dist/cliques-<version>-<commit>.oci.tar` (load it with `podman load -i`, or
`skopeo copy oci-archive:<file>:<tag> ...`), tagged `<version>` and `<version>-g<commit>`, and
`dist/image.json` describes it. The layers are cached under `<cache>/image/layout-<key>/`,
keyed on the sources they are made of: when nothing changed, a build only re-labels and
re-tags (a few seconds). `<cache>` is `$CLIQUES_CACHE_DIR`, `$XDG_CACHE_HOME/cliques` or
`~/.cache/cliques`, as for the dev cluster.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECIPE = 3  # bump to invalidate every cached base and layout
SUITE = "bookworm"
MIRRORS = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
BASE_PACKAGES = ("python3", "ca-certificates")
# Files of the extracted packages that a Python program never runs: package tools, perl and
# documentation. Paths relative to the root; directories go whole.
BASE_PRUNE = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/lintian",
    "usr/share/perl5",
    "usr/share/debconf",
    "usr/share/dpkg",
    "usr/share/bash-completion",
    "usr/lib/x86_64-linux-gnu/gconv",  # iconv modules: Python has its own codecs
    "usr/lib/python3.11/test",
    "usr/lib/python3.11/idlelib",
    "usr/lib/python3.11/lib2to3",
    "usr/lib/python3.11/tkinter",
    "usr/lib/python3.11/turtledemo",
    "usr/lib/python3.11/ensurepip",
    "usr/lib/python3.11/pydoc_data",
    "var/cache",
    "var/log",
)
BASE_PRUNE_BIN = ("dpkg", "debconf", "openssl", "c_rehash", "update-alternatives", "tar", "py")
PYTHON = "3.11"
SITE = f"usr/local/lib/python{PYTHON}/dist-packages"
# Wheel tags the image's interpreter (CPython 3.11, glibc 2.36, x86_64) accepts.
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(36, 16, -1)] + [
    "manylinux2014_x86_64"
]
UID = GID = 65532
ENTRYPOINT = "/usr/local/bin/cliques"
# What the app layer is made of: a change in any of these rebuilds it.
APP_SOURCES = (
    "python",
    "rust",
    "Cargo.toml",
    "Cargo.lock",
    "pyproject.toml",
    "rust-toolchain.toml",
    "requirements/runtime.lock",
    "scripts/build_image.py",
)
LAUNCHER = """#!/usr/bin/python3 -I
# The operator's entry point (python -I: no PYTHON* variables, no user site, no cwd on path).
import sys

from cliques.cli import main

sys.exit(main())
"""
PASSWD = (
    "root:x:0:0:root:/root:/sbin/nologin\n"
    "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
)
GROUP = "root:x:0:\nnonroot:x:65532:\n"


class BuildError(Exception):
    """A step failed: the message says which and what to do."""


_STARTED = time.monotonic()


def step(message: str) -> None:
    """One line of progress, with the seconds since the build started."""
    print(f"==> [{time.monotonic() - _STARTED:5.1f}s] {message}", flush=True)


def run(*argv: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run a command; on failure raise BuildError with its output's tail."""
    args = [str(a) for a in argv]
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        raise BuildError(f"`{' '.join(args[:6])} ...` failed ({done.returncode}):\n{tail}")
    return done.stdout


def cache_root() -> Path:
    explicit = os.environ.get("CLIQUES_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "cliques"


def ensure_tools() -> None:
    """mmdebstrap and umoci from Debian, installed only if missing (like every make target)."""
    missing = [pkg for pkg in ("mmdebstrap", "umoci") if shutil.which(pkg) is None]
    if not missing:
        return
    if os.geteuid() != 0:
        raise BuildError(f"needs {', '.join(missing)}: run `apt-get install {' '.join(missing)}`")
    step(f"installing {', '.join(missing)} with apt-get")
    lock = "DPkg::Lock::Timeout=600"
    run("apt-get", "-o", lock, "update", "-q")
    run("apt-get", "-o", lock, "install", "-y", "-q", "--no-install-recommends", *missing)


def digest_paths(paths: list[Path], extra: str) -> str:
    """sha256 over the git-tracked (and untracked, not ignored) files under `paths`."""
    listed = run(
        "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--",
        *[str(p.relative_to(ROOT)) for p in paths], cwd=ROOT,
    )  # fmt: skip
    h = hashlib.sha256(extra.encode())
    for name in sorted(set(filter(None, listed.split("\0")))):
        path = ROOT / name
        if path.is_file():
            h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def base_key() -> str:
    text = json.dumps([RECIPE, SUITE, MIRRORS, BASE_PACKAGES, BASE_PRUNE, BASE_PRUNE_BIN])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def build_base(dest: Path) -> None:
    """The Debian root file system of layer 1, into `dest` (written whole or not at all)."""
    work = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rootfs = work / "rootfs"
    step(f"Debian {SUITE}: {', '.join(BASE_PACKAGES)} with their dependencies (mmdebstrap)")
    # The hook runs on the downloaded packages, before the apt cache is cleaned: it records
    # each package for scanners (extract runs no dpkg, so there is no dpkg status otherwise).
    status_hook = (
        'mkdir -p "$1/var/lib/dpkg/status.d" && for deb in "$1"/var/cache/apt/archives/*.deb; '
        'do p=$(dpkg-deb -f "$deb" Package); { dpkg-deb -f "$deb"; '
        'echo "Status: install ok installed"; } > "$1/var/lib/dpkg/status.d/$p"; done'
    )
    run(
        "mmdebstrap", "--mode=root", "--variant=extract", "--quiet",
        f"--include={','.join(BASE_PACKAGES)}",
        f"--extract-hook={status_hook}",
        SUITE, rootfs, *MIRRORS,
    )  # fmt: skip
    for rel in BASE_PRUNE:
        shutil.rmtree(rootfs / rel, ignore_errors=True)
    for prefix in BASE_PRUNE_BIN:
        for directory in ("usr/bin", "usr/sbin", "bin", "sbin"):
            for path in (rootfs / directory).glob(f"{prefix}*"):
                if path.name.startswith("python"):
                    continue
                path.unlink()
    for rel in ("var/lib/dpkg/info", "var/lib/dpkg/alternatives", "etc/apt"):
        shutil.rmtree(rootfs / rel, ignore_errors=True)
    (rootfs / "var/cache").mkdir(mode=0o755)
    # What update-ca-certificates would have written (every Mozilla CA, as Debian enables).
    certs = sorted((rootfs / "usr/share/ca-certificates").rglob("*.crt"))
    if not certs:
        raise BuildError("no CA certificates were extracted (ca-certificates)")
    bundle = rootfs / "etc/ssl/certs/ca-certificates.crt"
    bundle.parent.mkdir(parents=True, exist_ok=True)
    bundle.write_text("".join(c.read_text() for c in certs))
    (rootfs / "etc/passwd").write_text(PASSWD)
    (rootfs / "etc/group").write_text(GROUP)
    home = rootfs / "home/nonroot"
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, UID, GID)
    for rel, mode in (("tmp", 0o1777), ("run", 0o755), ("proc", 0o555), ("sys", 0o555)):
        (rootfs / rel).mkdir(exist_ok=True)
        (rootfs / rel).chmod(mode)
    var_run = rootfs / "var/run"
    if not var_run.is_symlink() and not var_run.exists():
        var_run.symlink_to("/run")
    step("byte-compiling the standard library with the image's interpreter")
    run(
        "chroot", rootfs, "/usr/bin/python3", "-m", "compileall", "-q", "-j1",
        "--invalidation-mode", "unchecked-hash", f"/usr/lib/python{PYTHON}",
    )  # fmt: skip
    shutil.rmtree(dest, ignore_errors=True)
    work.rename(dest)


def build_wheel(out: Path) -> Path:
    step("the operator's wheel: maturin build --release --locked")
    maturin = shutil.which("maturin") or str(ROOT / ".venv/bin/maturin")
    run(maturin, "build", "--release", "--locked", "--quiet", "--out", out, cwd=ROOT)
    wheels = sorted(out.glob("cliques-*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"expected one wheel in {out}, found {[w.name for w in wheels]}")
    return wheels[0]


def pip_env() -> dict[str, str]:
    """The build machine's pip settings, minus local wheel directories: only PyPI's files,
    checked against the lock's hashes, may enter the image."""
    return {k: v for k, v in os.environ.items() if k not in ("PIP_FIND_LINKS", "PIP_NO_INDEX")}


def install_app(rootfs: Path, wheel: Path) -> None:
    site = rootfs / SITE
    target = ["--target", str(site), "--no-compile", "--no-deps", "--disable-pip-version-check"]
    tags = ["--python-version", PYTHON, "--implementation", "cp", "--abi", "cp311"]
    tags += ["--abi", "abi3", "--abi", "none", "--only-binary=:all:"]
    for platform in PLATFORMS:
        tags += ["--platform", platform]
    pip = [sys.executable, "-m", "pip", "install", "--quiet", *target, *tags]
    step("runtime dependencies from requirements/runtime.lock (hashes required)")
    run(*pip, "--require-hashes", "-r", ROOT / "requirements/runtime.lock", env=pip_env())
    step(f"the operator: {wheel.name}")
    run(*pip, wheel, env=pip_env())
    stray = lab_files(site)
    if stray:
        raise BuildError(f"the image would carry cliques-lab: {', '.join(stray)}")
    shutil.rmtree(site / "bin", ignore_errors=True)  # launchers with the build machine's path
    launcher = rootfs / ENTRYPOINT.lstrip("/")
    launcher.parent.mkdir(parents=True, exist_ok=True)
    launcher.write_text(LAUNCHER)
    launcher.chmod(0o755)
    step("byte-compiling the packages with the image's interpreter")
    run(
        "chroot", rootfs, "/usr/bin/python3", "-m", "compileall", "-q", "-j1",
        "--invalidation-mode", "unchecked-hash", "/" + SITE,
    )  # fmt: skip
    run("chroot", rootfs, "/usr/bin/python3", "-I", "-c", "import cliques._core, uvloop, aiohttp")


# What cliques-lab installs (lab/), and where the lab's modules lived inside cliques before
# they became a distribution of their own: none of it belongs in the operator's image.
LAB_PATTERNS = ("cliques_lab", "cliques_lab-*", "cliques/bench", "cliques/devcluster")


def lab_files(site: Path) -> list[str]:
    """The paths under `site` that belong to cliques-lab, relative to it (none, normally)."""
    return sorted(str(p.relative_to(site)) for pat in LAB_PATTERNS for p in site.glob(pat))


def umoci(*args: str | Path) -> str:
    return run("umoci", *args)


def build_layout(layout: Path, base: Path, wheel_dir: Path) -> None:
    """The two-layer image as an OCI layout in `layout` (tag `build`)."""
    work = layout.with_name(layout.name + ".tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    oci, bundle = work / "oci", work / "bundle"
    umoci("init", "--layout", oci)
    umoci("new", "--image", f"{oci}:build")
    umoci("unpack", "--image", f"{oci}:build", bundle)
    step("layer 1: the Debian root file system")
    (bundle / "rootfs").rmdir()
    run("cp", "-a", "--reflink=auto", base / "rootfs", bundle / "rootfs")
    umoci("repack", "--refresh-bundle", "--no-history", "--image", f"{oci}:build", bundle)
    wheel = build_wheel(wheel_dir)
    install_app(bundle / "rootfs", wheel)
    step("layer 2: the operator and its dependencies")
    umoci("repack", "--no-history", "--image", f"{oci}:build", bundle)
    shutil.rmtree(bundle)
    shutil.rmtree(layout, ignore_errors=True)
    work.rename(layout)


def project_version() -> str:
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    return str(cargo["workspace"]["package"]["version"])


def git_commit() -> str:
    commit = run("git", "rev-parse", "--short=12", "HEAD", cwd=ROOT).strip()
    dirty = run("git", "status", "--porcelain", "--untracked-files=no", cwd=ROOT).strip()
    return commit + ("-dirty" if dirty else "")


def finish(layout: Path, out_dir: Path, version: str, commit: str, key: str) -> dict[str, object]:
    """Label and tag a copy of the cached layout, tar it into `out_dir`; describe it."""
    tags = [version, f"{version}-g{commit}"]
    archive = out_dir / f"cliques-{version}-{commit}.oci.tar"
    step(f"labels and tags {', '.join(tags)}")
    with tempfile.TemporaryDirectory(prefix="cliques-image-", dir=out_dir) as tmp:
        oci = Path(tmp) / "oci"
        run("cp", "-a", "--reflink=auto", layout / "oci", oci)
        labels = {
            "org.opencontainers.image.title": "cliques",
            "org.opencontainers.image.version": version,
            "org.opencontainers.image.revision": commit,
            "org.opencontainers.image.licenses": "Apache-2.0",
            "org.opencontainers.image.created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "dev.cliques.image.sources": key,
        }
        config = ["config", "--no-history", "--image", f"{oci}:build", "--tag", tags[0]]
        config += ["--config.user", f"{UID}:{GID}", "--config.entrypoint", ENTRYPOINT]
        config += ["--config.cmd", "operator", "--config.workingdir", "/"]
        config += ["--config.env", "PATH=/usr/local/bin:/usr/bin:/bin"]
        config += ["--config.env", "PYTHONDONTWRITEBYTECODE=1", "--config.env", "TMPDIR=/tmp"]
        config += ["--config.env", "PYTHONUNBUFFERED=1", "--clear=config.labels"]
        for name, value in labels.items():
            config += ["--config.label", f"{name}={value}", "--manifest.annotation"]
            config += [f"{name}={value}"]
        umoci(*config)
        umoci("rm", "--image", f"{oci}:build")
        umoci("tag", "--image", f"{oci}:{tags[0]}", tags[1])
        umoci("gc", "--layout", oci)
        partial = archive.with_suffix(".partial")
        with tarfile.open(partial, "w") as tar:
            for entry in sorted(oci.iterdir()):
                tar.add(entry, arcname=entry.name)
        partial.rename(archive)
    for old in out_dir.glob("cliques-*.oci.tar"):
        if old != archive:
            old.unlink()  # one image in dist/: the one image.json describes
    info: dict[str, object] = {
        "archive": str(archive.relative_to(ROOT)),
        "tags": tags,
        "version": version,
        "commit": commit,
        "sources": key,
        "entrypoint": ENTRYPOINT,
        "user": f"{UID}:{GID}",
        "archive_bytes": archive.stat().st_size,
    }
    info.update(layer_sizes(archive))
    return info


def layer_sizes(archive: Path) -> dict[str, object]:
    """Compressed and uncompressed sizes of the image's layers, read back from the archive."""
    with tarfile.open(archive) as tar:
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        manifest_digest = index["manifests"][0]["digest"].replace(":", "/")
        manifest = json.load(tar.extractfile(f"blobs/{manifest_digest}"))  # type: ignore[arg-type]
        compressed = [layer["size"] for layer in manifest["layers"]]
        uncompressed = []
        for layer in manifest["layers"]:
            blob = tar.extractfile("blobs/" + layer["digest"].replace(":", "/"))
            with tarfile.open(fileobj=blob, mode="r:gz") as inner:
                uncompressed.append(sum(m.size for m in inner.getmembers() if m.isfile()))
    return {"layers_compressed_bytes": compressed, "layers_uncompressed_bytes": uncompressed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="output directory")
    parser.add_argument("--refresh-base", action="store_true", help="rebuild the Debian base")
    parser.add_argument("--force", action="store_true", help="rebuild both layers")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        if os.geteuid() != 0:
            raise BuildError("needs root (mmdebstrap --mode=root, chroot, file ownership)")
        ensure_tools()
        cache = cache_root() / "image"
        bkey = base_key()
        base = cache / f"base-{bkey}"
        if args.refresh_base or args.force or not (base / "rootfs").is_dir():
            build_base(base)
        else:
            step(f"Debian base: reusing {base}")
        key = digest_paths([ROOT / p for p in APP_SOURCES if (ROOT / p).exists()], bkey)
        layout = cache / f"layout-{key}"
        if args.force or args.refresh_base or not (layout / "oci/index.json").is_file():
            with tempfile.TemporaryDirectory(prefix="cliques-wheel-") as wheels:
                build_layout(layout, base, Path(wheels))
        else:
            step(f"layers: reusing {layout} (sources unchanged)")
        for stale in cache.glob("layout-*"):
            if stale != layout:
                shutil.rmtree(stale, ignore_errors=True)
        args.out.mkdir(parents=True, exist_ok=True)
        info = finish(layout, args.out.resolve(), project_version(), git_commit(), key)
    except BuildError as exc:
        print(f"make image: {exc}", file=sys.stderr)
        return 1
    info["build_seconds"] = round(time.monotonic() - started, 1)
    (args.out / "image.json").write_text(json.dumps(info, indent=2) + "\n")
    total = sum(info["layers_uncompressed_bytes"])  # type: ignore[arg-type]
    step(
        f"{info['archive']}: {total / 1e6:.0f} MB unpacked, "
        f"{int(info['archive_bytes']) / 1e6:.0f} MB archive, {info['build_seconds']} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
