#!/usr/bin/env bash
# Issue 26's target: over a pgbench load (initdb + `csdchar db prepare --workload tpcb`), the sum
# of the data directory's allocated blocks as csdchar reads them (`csdchar estimate`'s allocated
# bytes per file) against the change in the dataset's `used`, for each compression setting; and
# the same sum from a plain stat (find -printf %b), which on zfs-fuse is the kernel's FUSE
# attribute cache and can predate the pool's last commit. Root; zfs-fuse (its daemon is
# started when none runs and stopped after) or OpenZFS. A pool on a sparse file, destroyed after.
#
#   [RECORDSIZE=8k] scripts/bench/zfs-allocated.sh [SCALE] [COMPRESSION...]   (defaults: 128k, 5, off gzip)
set -euo pipefail
cd "$(dirname "$0")/../.."
scale=${1:-5}; shift || true
compressions=("${@:-off}")
[ $# -eq 0 ] && compressions=(off gzip)
cargo build -q -p csdchar-cli
bin=$PWD/target/debug/csdchar
img=/var/tmp/csdchar-zfs-allocated.img
pool=csdchar_allocated
started_daemon=
if ! zpool list >/dev/null 2>&1; then
  zfs-fuse --pidfile /run/csdchar-zfs-allocated.pid --no-kstat-mount; started_daemon=1; sleep 1
fi
# zfs-fuse reports a dataset busy for a moment after its last user closed it.
retry() { for _ in 1 2 3 4 5 6 7 8 9 10; do "$@" 2>/dev/null && return 0; sleep 1; done; "$@"; }
cleanup() {
  retry zpool destroy -f "$pool" || true
  rm -f "$img"
  rmdir "/var/tmp/$pool" 2>/dev/null || true
  if [ -n "$started_daemon" ]; then
    pid=$(cat /run/csdchar-zfs-allocated.pid 2>/dev/null || true)
    if [ -n "$pid" ]; then
      kill "$pid" 2>/dev/null || true
      # zfs-fuse will not start again while its pid file is there.
      while kill -0 "$pid" 2>/dev/null && [ "$(ps -o stat= -p "$pid")" != Z ]; do sleep 0.2; done
    fi
    rm -f /run/csdchar-zfs-allocated.pid
  fi
}
trap cleanup EXIT
truncate -s 4G "$img"
zpool create -f -m "/var/tmp/$pool" "$pool" "$img"
# Make the pool commit: zpool sync where there is one, else a property set (a sync task).
commit() {
  zpool sync "$pool" 2>/dev/null || { zfs set csdchar:commit=1 "$1"; zfs inherit csdchar:commit "$1"; }
}
used() { commit "$1"; zfs get -Hp -o value used "$1"; }
echo "compression | csdchar's allocated (MB) | plain stat (MB) | dataset used change (MB) | csdchar / used"
for c in "${compressions[@]}"; do
  ds=$pool/pg-$c
  zfs create -o compression="$c" -o recordsize="${RECORDSIZE:-128k}" "$ds"
  mnt=$(zfs get -H -o value mountpoint "$ds")
  chmod 755 "$mnt"
  before=$(used "$ds")
  "$bin" db prepare --pgdata "$mnt/pgdata" --workload tpcb --scale "$scale" --force >/dev/null
  after=$(used "$ds")
  plain=$(find "$mnt/pgdata" -type f -printf '%b\n' | awk '{s += $1} END {print s * 512}')
  alloc=$("$bin" estimate "$mnt/pgdata" --sample 1 --output-format json |
    python3 -c 'import json, sys; print(sum(f["allocated_bytes"] for f in json.load(sys.stdin)["files"]))')
  awk -v c="$c" -v a="$alloc" -v p="$plain" -v u="$((after - before))" \
    'BEGIN {printf "%s | %.2f | %.2f | %.2f | %.4f\n", c, a / 1e6, p / 1e6, u / 1e6, a / u}'
  retry zfs destroy -r "$ds"
done
