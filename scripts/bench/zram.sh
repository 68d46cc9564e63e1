# Sourced by the bench scripts that need a zram device of their own.
# `zram_add SIZE [ALGORITHM]` hot-adds one (lz4 by default), sets ZRAM_ID, DEV and SYS, and removes
# it on exit (an EXIT trap; a script with cleanup of its own puts it in `extra_cleanup`, which runs
# first). `zram_reset SIZE [ALGORITHM]` empties it and sets its size and algorithm again. Needs root.
extra_cleanup() { :; }
# The device can stay busy for a moment after its last user (udev's probe, a file system going away).
zram_retry() { for _ in $(seq 100); do "$@" 2>/dev/null && return 0; sleep 0.05; done; echo "warning: $* failed" >&2; return 1; }
zram_reset() {
  zram_retry sh -c "echo 1 > $SYS/reset"
  echo "${2:-lz4}" > "$SYS/comp_algorithm"
  echo "$1" > "$SYS/disksize"
}
zram_remove() {
  [ -n "${ZRAM_ID:-}" ] || return 0
  zram_retry sh -c "echo 1 > $SYS/reset"
  zram_retry sh -c "echo $ZRAM_ID > /sys/class/zram-control/hot_remove"
}
zram_add() {
  [ -e /sys/class/zram-control/hot_add ] || modprobe zram
  ZRAM_ID=$(cat /sys/class/zram-control/hot_add)
  DEV=/dev/zram$ZRAM_ID
  SYS=/sys/block/zram$ZRAM_ID
  trap 'extra_cleanup; zram_remove' EXIT
  zram_reset "$@"
}
