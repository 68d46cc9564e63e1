#!/usr/bin/env bash
# csdchar on several hosts over real sshd on the loopback (issue 42): the start spread
# --hosts records and the fan-out's cost over one local run of the same step.
#
# Sets up N sshd (127.0.0.2…) with their own host keys, a test key and a client config in a
# temporary directory (as root sshd runs as the postgres user, as in the tests), then, ROUNDS
# times alternating: one local run of STEP, and the same STEP with --hosts on the N hosts.
# Reports per round: the local wall time, the fleet wall time, the fleet's preflight time,
# --start-delay, the overhead (fleet − delay − local), and the start spread from fleet.json.
#   SSHD=path/to/sshd (default: CSDCHAR_SSHD, target/openssh-server/usr/sbin/sshd as scripts/test.sh unpacks it, /usr/sbin/sshd)
#   BIN=target/release/csdchar  N=3  ROUNDS=5  DELAY=1s
#   STEP='block --engine null --rw randread --runtime 2s --time-based'
#   LOCAL_STEP=STEP (the local run; for a db step give it N times the threads, the same total
#   load on the one server, so that the difference is the fan-out's, not the server's)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-target/release/csdchar}
N=${N:-3}
ROUNDS=${ROUNDS:-5}
DELAY=${DELAY:-1s}
STEP=${STEP:-block --engine null --rw randread --runtime 2s --time-based}
LOCAL_STEP=${LOCAL_STEP:-$STEP}
SSHD=${SSHD:-${CSDCHAR_SSHD:-}}
for c in target/openssh-server/usr/sbin/sshd /usr/sbin/sshd; do
  [ -n "$SSHD" ] || { [ -x "$c" ] && SSHD=$(cd "$(dirname "$c")" && pwd)/sshd; } || true
done
[ -x "$SSHD" ] || { echo "no sshd: run scripts/test.sh once (it unpacks one) or set SSHD" >&2; exit 1; }
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
libs=$(dirname "$(dirname "$SSHD")")/lib/x86_64-linux-gnu
if [ "$(id -u)" = 0 ]; then user=postgres; else user=$(id -un); fi
uid=$(id -u "$user"); gid=$(id -g "$user")

d=$(mktemp -d /tmp/csdchar-fleetbench.XXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$d"; }
trap cleanup EXIT
chmod 755 "$d"
ssh-keygen -q -t ed25519 -N "" -f "$d/id" && cp "$d/id.pub" "$d/ak" && chown "$uid:$gid" "$d/ak"
port=$(( 20000 + RANDOM % 20000 ))
: > "$d/known"; : > "$d/config"; : > "$d/hosts"
for i in $(seq 1 "$N"); do
  h=$d/h$i; mkdir -p "$h/work"; chown -R "$uid:$gid" "$h"
  ssh-keygen -q -t ed25519 -N "" -f "$h/key" && chown "$uid:$gid" "$h/key"
  printf 'ListenAddress 127.0.0.%d:%d\nHostKey %s\nPidFile %s\nAuthorizedKeysFile %s\nUsePAM no\nStrictModes no\nPasswordAuthentication no\nMaxSessions 32\nLogLevel ERROR\n' \
    $((i + 1)) "$port" "$h/key" "$h/pid" "$d/ak" > "$h/cfg"
  if [ "$(id -u)" = 0 ]; then
    LD_LIBRARY_PATH=$libs setpriv --reuid="$uid" --regid="$gid" --clear-groups "$SSHD" -D -e -f "$h/cfg" 2>"$h/log" &
  else
    LD_LIBRARY_PATH=$libs "$SSHD" -D -e -f "$h/cfg" 2>"$h/log" &
  fi
  pids+=($!)
  echo "h$i $(cat "$h/key.pub")" >> "$d/known"
  printf 'Host h%d\n  HostName 127.0.0.%d\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  HostKeyAlias h%d\n' \
    "$i" $((i + 1)) "$port" "$user" "$d/id" "$d/known" "$i" >> "$d/config"
  echo "h$i csdchar=$BIN workdir=$h/work" >> "$d/hosts"
done
sleep 1
export CSDCHAR_SSH_CONFIG=$d/config
now() { date +%s.%N; }
echo "round local_s fleet_s preflight_s ssh_connect_s delay overhead_s spread_ms"
for r in $(seq 1 "$ROUNDS"); do
  # shellcheck disable=SC2086
  t0=$(now); $BIN $LOCAL_STEP --output-format json --output /dev/null; t1=$(now)
  # shellcheck disable=SC2086
  $BIN $STEP --hosts "$d/hosts" --output "$d/run$r" --start-delay "$DELAY" 2> "$d/err$r" > /dev/null &
  fp=$!
  while ! grep -q "passed the preflight" "$d/err$r" 2>/dev/null && kill -0 $fp 2>/dev/null; do sleep 0.01; done
  t2=$(now); wait $fp; t3=$(now)
  # One plain ssh connection (no multiplexing) to one host: what the preflight's first contact costs.
  c0=$(now); ssh -F "$d/config" -o BatchMode=yes h1 true; c1=$(now)
  python3 - "$t0" "$t1" "$t1" "$t2" "$t3" "$DELAY" "$d/run$r/fleet.json" "$r" "$c0" "$c1" <<'PY'
import json, sys
t0, t1, f0, pre, f1 = map(float, sys.argv[1:6])
delay = sys.argv[6]
d = float(delay[:-2]) / 1000 if delay.endswith("ms") else float(delay.rstrip("s"))
m = json.load(open(sys.argv[7]))
c = float(sys.argv[10]) - float(sys.argv[9])
local, fleet = t1 - t0, f1 - f0
print(f"{sys.argv[8]} {local:.3f} {fleet:.3f} {pre - f0:.3f} {c:.3f} {delay} {fleet - d - local:.3f} {m['start_spread_ms']:.3f}")
PY
done
