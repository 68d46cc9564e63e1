# Sourced by the bench scripts that need a compressing drive with a filesystem:
# `zram_ext4_mount NAME` adds a zram device (lz4, ZRAM_SIZE, 8G by default), makes ext4 on it, mounts it
# with discard (so freed blocks leave the drive) on a new /var/tmp/csdchar-NAME.XXXX and
# sets ZRAM_ID and MNT. The EXIT trap unmounts and removes it; a script with cleanup of
# its own puts it in `extra_cleanup`. Needs root.
extra_cleanup() { :; }
zram_ext4_cleanup() {
  extra_cleanup
  [ -n "${MNT:-}" ] || return 0
  # The server's last writes can keep the mount busy for a moment.
  for _ in $(seq 50); do umount "$MNT" 2>/dev/null && break; mountpoint -q "$MNT" || break; sleep 0.2; done
  rmdir "$MNT" 2>/dev/null || true
  for _ in $(seq 50); do echo 1 > "/sys/block/zram$ZRAM_ID/reset" 2>/dev/null && break; sleep 0.1; done
  echo "$ZRAM_ID" > /sys/class/zram-control/hot_remove 2>/dev/null || true
}
zram_ext4_mount() {
  modprobe zram 2>/dev/null || true
  ZRAM_ID=$(cat /sys/class/zram-control/hot_add)
  MNT=$(mktemp -d "/var/tmp/csdchar-$1.XXXX")
  trap zram_ext4_cleanup EXIT
  echo lz4 > "/sys/block/zram$ZRAM_ID/comp_algorithm"
  echo "${ZRAM_SIZE:-8G}" > "/sys/block/zram$ZRAM_ID/disksize"
  mkfs.ext4 -q -F "/dev/zram$ZRAM_ID"
  mount -o discard "/dev/zram$ZRAM_ID" "$MNT"
}
