#!/usr/bin/env bash
# The test command: installs what the tests need on a fresh Debian/Ubuntu
# machine (e2fsprogs, btrfs-progs, zfs-fuse, dmsetup, postgresql, chromium, fio when root; py-opengauss and
# fio-plot in venvs),
# then runs format check, clippy (warnings denied), every test
# (the privileged ones run when root), and every bench once in test mode; it also builds the
# Debian package from the test build and, as root, installs, checks and removes it (dpkg-dev,
# man-db and bash-completion for that).
set -euo pipefail
cd "$(dirname "$0")/.."
# Where the time goes: each phase's start, in seconds since this script began.
started=$(date +%s)
phase() { echo "==> $1 (at $(( $(date +%s) - started )) s)"; }
phase "packages and tools"

need=()
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v mkfs.btrfs >/dev/null || need+=(btrfs-progs)
# A real ZFS for tests/zfs.rs (its daemon is started and stopped by the tests).
command -v zfs-fuse >/dev/null || need+=(zfs-fuse)
command -v losetup >/dev/null || need+=(mount)
# fio's own fio_jsonplus_clat2csv reads csdchar's fio-json+ in tests/fio_jobs.rs.
command -v fio_jsonplus_clat2csv >/dev/null || need+=(fio)
python3 -c 'import six' 2>/dev/null || need+=(python3-six)
# fio's fiologparser_hist.py (shipped with fio) reads csdchar's clat histogram logs in
# tests/suite/fio_hist_log.rs; it needs numpy and pandas (Debian's, in /usr/bin/python3).
/usr/bin/python3 -c 'import numpy, pandas' 2>/dev/null || need+=(python3-numpy python3-pandas)
# Device-mapper stacks in the device-safety tests (they skip where the kernel has none).
command -v dmsetup >/dev/null || need+=(dmsetup)
command -v cc >/dev/null || need+=(build-essential)
# The OpenSSH client drives several load hosts (--hosts: crates/fleet); ssh-keygen makes the
# loopback tests' keys.
command -v ssh >/dev/null && command -v ssh-keygen >/dev/null || need+=(openssh-client)
# OpenSSL's headers for the openssl crate (pgwire verifies server certificates with X509_verify_cert).
pkg-config --exists openssl 2>/dev/null || need+=(libssl-dev pkg-config)
# The Debian package: built with dpkg-deb/dpkg-shlibdeps and strip, then installed and checked
# with man and bash's completion loader (scripts/package-deb.sh, scripts/check-deb.sh).
command -v dpkg-shlibdeps >/dev/null || need+=(dpkg-dev)
command -v strip >/dev/null || need+=(binutils)
command -v man >/dev/null || need+=(man-db)
[ -f /usr/share/bash-completion/bash_completion ] || need+=(bash-completion)
# PostgreSQL server binaries for the managed-cluster tests; no system cluster.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need+=(postgresql)
  if [ "$(id -u)" = 0 ]; then
    mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf
  fi
fi
# Headless Chromium renders the report's HTML page in tests/report.rs.
command -v chromium >/dev/null || need+=(chromium)
# Python with venv for py-opengauss (below).
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# As root Chromium is installed above, so the report's browser check must run, not skip.
if [ "$(id -u)" = 0 ]; then export CSDCHAR_REQUIRE_BROWSER=1 CSDCHAR_REQUIRE_ZFS=1; fi
# py-opengauss, an independent implementation of openGauss's SHA256 proof that
# tests/opengauss_auth.rs checks csdchar's against; in a venv (in the tool cache below), as
# Debian's Python refuses pip installs outside one (PEP 668). Once it is there the
# comparison must run, not skip.
# The Python tools live in the machine's cache, not in target/: like the apt packages above they
# are installed once per machine, so a fresh clone does not download and build them again (~1 min).
tool_cache="${CSDCHAR_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/csdchar}"
mkdir -p "$tool_cache"
py_venv="$tool_cache/py-opengauss"
if ! "$py_venv/bin/python" -c 'import py_opengauss' 2>/dev/null; then
  { python3 -m venv --clear "$py_venv" && "$py_venv/bin/python" -m pip install --quiet \
      --disable-pip-version-check py-opengauss==1.3.11; } ||
    echo "note: could not install py-opengauss; tests/opengauss_auth.rs will not compare with it"
fi
if "$py_venv/bin/python" -c 'import py_opengauss' 2>/dev/null; then
  CSDCHAR_PY_OPENGAUSS_PYTHON="$(cd "$py_venv/bin" && pwd)/python"
  export CSDCHAR_PY_OPENGAUSS_PYTHON CSDCHAR_REQUIRE_PY_OPENGAUSS=1
fi
# fio-plot (a Python package) draws a chart from csdchar's fio-json in tests/fio_jobs.rs.
plot_venv="$tool_cache/fio-plot"
if [ ! -x "$plot_venv/bin/fio-plot" ]; then
  { python3 -m venv --clear "$plot_venv" && "$plot_venv/bin/python" -m pip install --quiet \
      --disable-pip-version-check fio-plot==1.1.21; } ||
    echo "note: could not install fio-plot; tests/fio_jobs.rs will not draw with it"
fi
# fio's fiologparser_hist.py (Debian ships it compressed in fio's docs) with numpy and pandas:
# once both are there tests/suite/fio_hist_log.rs must run it.
if { [ -f /usr/bin/fiologparser_hist.py ] || [ -f /usr/share/doc/fio/fiologparser_hist.py.gz ]; } &&
  /usr/bin/python3 -c 'import numpy, pandas' 2>/dev/null; then
  export CSDCHAR_REQUIRE_FIO_HIST=1
fi
if [ -x "$plot_venv/bin/fio-plot" ] && command -v fio_jsonplus_clat2csv >/dev/null; then
  CSDCHAR_FIO_PLOT="$(cd "$plot_venv/bin" && pwd)/fio-plot"
  export CSDCHAR_FIO_PLOT CSDCHAR_REQUIRE_FIO_TOOLS=1
fi
if ! command -v cargo >/dev/null; then
  echo "cargo not found: install Rust (rustup) first" >&2
  exit 1
fi
# Compiled third-party crates are kept between runs on this machine, as hosted CI keeps cargo's
# target directory (rust-cache): as root, in /var/cache/csdchar/target (readable by the postgres
# user, who runs sshd and csdchar in the loopback tests; /root is not). The workspace's own crates
# are always compiled anew: their artifacts from earlier runs are removed first, so a run builds
# and lints this clone's sources, and the directory does not grow from run to run. Without root,
# or with CARGO_TARGET_DIR set, the usual target/ is used. Incremental compilation is off: a
# clone's first build gains nothing from it and writes gigabytes.
if [ -z "${CARGO_TARGET_DIR:-}" ] && [ "$(id -u)" = 0 ]; then
  export CARGO_TARGET_DIR=/var/cache/csdchar/target
  mkdir -p "$CARGO_TARGET_DIR"
  chmod 755 /var/cache/csdchar "$CARGO_TARGET_DIR"
  for name in $(cargo metadata --no-deps --format-version 1 --locked | python3 -c '
import json, sys
print(" ".join(sorted({t["name"].replace("-", "_") for p in json.load(sys.stdin)["packages"]
                       for t in p["targets"]})))'); do
    rm -rf "$CARGO_TARGET_DIR"/debug/deps/"$name"-* "$CARGO_TARGET_DIR"/debug/deps/lib"$name"-*
  done
  rm -rf "$CARGO_TARGET_DIR"/debug/.fingerprint/csdchar-* "$CARGO_TARGET_DIR"/debug/build/csdchar-* \
    "$CARGO_TARGET_DIR"/debug/incremental "$CARGO_TARGET_DIR"/debug/csdchar "$CARGO_TARGET_DIR"/debian
fi
export CARGO_INCREMENTAL=0
if [ "$(id -u)" = 0 ] && [ ! -e /sys/class/zram-control ]; then
  modprobe zram 2>/dev/null || echo "note: zram module not available; zram tests will skip"
fi

# sshd for the loopback multi-host tests (crates/cli/tests/it/fleet_sshd.rs): Debian's
# openssh-server unpacked under the target directory (not in root's cache: the tests run sshd as the postgres
# user, who cannot enter /root), never installed (its postinst would start a daemon on
# port 22 and add a user); the tests start their own sshd processes on 127.0.0.2-4 as an
# unprivileged user and stop them.
sshd_root="${CARGO_TARGET_DIR:-target}/openssh-server"
if [ ! -x "$sshd_root/usr/sbin/sshd" ] && command -v apt-get >/dev/null; then
  sshd_dl=$(mktemp -d)
  if (cd "$sshd_dl" && { apt-get download openssh-server libwrap0 >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get download openssh-server libwrap0 >/dev/null 2>&1; }; }); then
    mkdir -p "$sshd_root"
    for deb in "$sshd_dl"/*.deb; do dpkg -x "$deb" "$sshd_root"; done
  else
    echo "note: could not download openssh-server; the loopback sshd tests will skip"
  fi
  rm -rf "$sshd_dl"
fi
if [ -x "$sshd_root/usr/sbin/sshd" ]; then
  CSDCHAR_SSHD="$(cd "$sshd_root/usr/sbin" && pwd)/sshd"
  export CSDCHAR_SSHD CSDCHAR_REQUIRE_SSHD=1
fi


phase "fmt"
cargo fmt --all -- --check
# Clippy's lints run inside the one test build: clippy-driver compiles the workspace's crates
# (every target: lib, bins, tests, benches), denying warnings as `cargo clippy --workspace
# --all-targets -- -D warnings` does, and makes the same code rustc would. A separate
# `cargo clippy` would check every dependency a second time (~220 CPU-seconds of 2 cores).
# Exported for the rest of the script: the later cargo calls then reuse this build.
clippy_driver=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver || true)
if [ -n "$clippy_driver" ]; then
  export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
  export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
  phase "build tests and benches, with clippy's lints (warnings denied)"
  cargo test --workspace --locked --all-targets --no-run
else
  phase "clippy"
  cargo clippy --workspace --all-targets --locked -- -D warnings
  phase "build tests and benches"
  cargo test --workspace --locked --all-targets --no-run
fi
# The Debian package of the binary the test build just made (target/debug/csdchar: a release
# build would add minutes), zstd-compressed (xz took 130 s, gzip 30 s on that unoptimized binary);
# as root it is installed, used (--version, man, completion, the README's main job) and removed.
phase "debian package"
deb=$(scripts/package-deb.sh --binary "${CARGO_TARGET_DIR:-target}/debug/csdchar" --compress zstd)
if [ "$(id -u)" = 0 ]; then
  scripts/check-deb.sh "$deb"
else
  echo "note: not root; $deb built but not installed"
fi
# The unit tests and the integration suite (tests/suite, one binary) run in parallel:
# most of their time is spent waiting on servers, devices and timers, not on the cores.
# Tests that share a machine-wide resource take its lock (the zfs-fuse daemon: zfs.rs); tests
# that need the machine to themselves live in `alone` modules and run afterwards, one at
# a time. Modules that drive the database client run their tests again on the io_uring
# driver themselves (`on_uring_too!`, a child process with CSDCHAR_CLIENT_IO=uring).
# One cargo call for the crates' tests and the suite, one binary after the other. Run side by
# side they finished sooner, but the loopback-sshd fault test then missed its 15 s bound under
# the load (a lost host noticed only at the step's end), so they stay apart. Every cargo call
# here selects the whole workspace (--workspace, then targets): a narrower package set would
# unify dependencies' features differently and rebuild them.
phase "tests"
RUST_TEST_THREADS="${RUST_TEST_THREADS:-6}" cargo test --workspace --locked -- --skip alone::
phase "tests that need the machine alone"
cargo test --workspace --locked --test suite alone:: -- --test-threads=1
# Every criterion bench once, in the test build (criterion's test mode: each benchmark runs
# once and must not fail): the block engine on a loop device the bench sets up itself (root),
# one db client exchange on a managed cluster, the generators and the estimator. Figures
# come from `cargo bench` and scripts/bench/ (BENCHMARKS.md), not from CI.
phase "benches (test mode)"
cargo test --workspace --locked --benches
phase "done"
