#!/usr/bin/env bash
# What zram's own work costs per page for csdchar's fillers at the same ratio:
# csdchar writes 64 MiB of each layout (--compress P, 4k chunks) to a zram
# device, dd reads it back to tmpfs, then per round dd writes it 8 times
# (bs 1M, O_DIRECT: zram compresses in dd's context) into a fresh device;
# CPU time (perf stat task-clock) per page, fills alternating round by round,
# and the ratio and same_pages mm_stat reports.
#
# Usage (root): scripts/bench/zram-filler-cost.sh      env: ROUNDS=5 P=75 CSDCHAR=
# Needs: cargo, perf, zram (modprobe zram).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
P=${P:-75}
[ "$(id -u)" = 0 ] || { echo "zram-filler-cost: needs root (zram)" >&2; exit 2; }
[ -n "${CSDCHAR:-}" ] || cargo build --release -q -p csdchar-cli
CSD=${CSDCHAR:-$PWD/target/release/csdchar}
source scripts/bench/zram.sh
TMP=$(mktemp -d /dev/shm/zram-filler-cost.XXXXXX)
extra_cleanup() { rm -rf "$TMP"; }
zram_add 1G

FILLS="zeros repeat"
for f in $FILLS; do
  zram_reset 1G
  "$CSD" block --rw write --bs 128k --iodepth 16 --size 64m --compress "$P" --compress-chunk 4k --compress-fill "$f" \
    "$DEV" --output-format json >/dev/null
  dd if="$DEV" of="$TMP/$f" bs=1M count=64 status=none
done
for r in $(seq "$ROUNDS"); do
  line="round $r:"
  for f in $FILLS; do
    zram_reset 1G
    dd if="$TMP/$f" of="$DEV" bs=1M oflag=direct status=none
    ms=$(perf stat -x, -e task-clock -- sh -c \
      "for k in 1 2 3 4 5 6 7 8; do dd if=$TMP/$f of=$DEV bs=1M oflag=direct status=none; done" 2>&1 | cut -d, -f1)
    read -r orig compr _ _ _ same _ <"$SYS/mm_stat"
    line="$line $(python3 -c "print(f'$f {$ms*1000/(8*16384):.2f} us/page, ratio {$orig/$compr:.3f}, same_pages $same |')")"
  done
  echo "$line load $(cut -d' ' -f1 /proc/loadavg)"
done
