#!/usr/bin/env bash
# The test command: installs what the tests need on a fresh Debian/Ubuntu
# machine (e2fsprogs, btrfs-progs, postgresql, chromium when root), then runs format check, clippy (warnings denied), every test
# (the privileged ones run when root), and compiles the benches.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v mkfs.btrfs >/dev/null || need+=(btrfs-progs)
command -v losetup >/dev/null || need+=(mount)
# Device-mapper stacks in the device-safety tests (they skip where the kernel has none).
command -v dmsetup >/dev/null || need+=(dmsetup)
command -v cc >/dev/null || need+=(build-essential)
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
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# As root Chromium is installed above, so the report's browser check must run, not skip.
if [ "$(id -u)" = 0 ]; then export CSDCHAR_REQUIRE_BROWSER=1; fi
if ! command -v cargo >/dev/null; then
  echo "cargo not found: install Rust (rustup) first" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ] && [ ! -e /sys/class/zram-control ]; then
  modprobe zram 2>/dev/null || echo "note: zram module not available; zram tests will skip"
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# Tests that configure devices must not run against each other's devices
# concurrently with benchmarks; the suite itself is safe in parallel.
cargo test --workspace --locked
cargo bench --workspace --locked --no-run
