#!/usr/bin/env bash
# Issue 31: TPS and client CPU per transaction over TLS, csdchar against pgbench (-M prepared,
# tpcb) and sysbench (oltp_read_write), alternating, on one managed cluster that takes TLS only
# (csdchar db prepare --listen 127.0.0.1 --tls: hostssl, TLSv1.3); and the cost of TLS itself:
# each tool over plain TCP on a second cluster (same settings, no --tls), alternating too.
# Every client connects with sslmode=require (libpq's PGSSLMODE for the peers).
# Usage: scripts/bench/tls-vs-peers.sh
#   env: ROUNDS=2 TIME=10 SCALE=10 CLIENTS="8 32" SB_THREADS=16 TABLES=8 TABLE_SIZE=50000
#        CSD_EXTRA="--client-io uring" (more csdchar run options) SYSBENCH=1 (0: no sysbench rows)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-2}; TIME=${TIME:-10}; SCALE=${SCALE:-10}; CLIENTS=${CLIENTS:-8 32}
SB_THREADS=${SB_THREADS:-16}; TABLES=${TABLES:-8}; TABLE_SIZE=${TABLE_SIZE:-50000}
cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
DIR=$(mktemp -d /var/tmp/csdchar-tlsbench.XXXX)
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
BIN=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PGBENCH=$BIN/pgbench
stop() {
  for d in "$DIR"/tls "$DIR"/plain; do
    [ -f "$d/postmaster.pid" ] || continue
    if [ "$(id -u)" = 0 ]; then su postgres -c "$BIN/pg_ctl stop -m fast -D $d" >/dev/null; else "$BIN/pg_ctl" stop -m fast -D "$d" >/dev/null; fi
  done
  rm -rf "$DIR"
}
trap stop EXIT
for kind in tls plain; do
  extra=(); [ "$kind" = tls ] && extra=(--tls)
  "$CSD" db prepare --workload tpcb --scale "$SCALE" --pgdata "$DIR/$kind" --listen 127.0.0.1 "${extra[@]}" \
    --keep-running --pg-set shared_buffers=512MB --pg-set max_wal_size=4GB >/dev/null 2>&1
  "$CSD" db prepare --workload oltp-read-write --tables "$TABLES" --table-size "$TABLE_SIZE" \
    --url "host=127.0.0.1 port=$(sed -n 4p "$DIR/$kind/postmaster.pid") user=postgres password=$(cut -d: -f5 "$DIR/$kind/csdchar-password") dbname=postgres sslmode=prefer" \
    >/dev/null 2>&1
done
ratio() { python3 -c "print(f'{$1:.3f}')"; }
med() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($#+1)/2 ))p"; }
# sb_run and pg_run read SOCK/PORT and the PG* environment: point them at a cluster over TCP.
. scripts/bench/peers.sh
use() { # tls|plain
  PORT=$(sed -n 4p "$DIR/$1/postmaster.pid"); SOCK=127.0.0.1
  export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
  PGPASSWORD=$(cut -d: -f5 "$DIR/$1/csdchar-password"); export PGPASSWORD
  if [ "$1" = tls ]; then export PGSSLMODE=require; else export PGSSLMODE=disable; fi
  URL="host=127.0.0.1 port=$PORT user=postgres password=$PGPASSWORD dbname=postgres sslmode=$PGSSLMODE"
}
csd_run() { # workload threads [args]: "tps cpu transactions"
  local w=$1 c=$2; shift 2
  /usr/bin/time -f "%U %S" -o "$DIR/t" "$CSD" db run --url "$URL" --workload "$w" --threads "$c" \
    --time "${TIME}s" --report-interval 0 --output-format json "$@" ${CSD_EXTRA:-} > "$DIR/o"
  python3 -c "import json; r=json.load(open('$DIR/o')); t=open('$DIR/t').read().split(); s=r['steps'][0]; print(s['tps'], float(t[0])+float(t[1]), s['transactions'], (s.get('tls_protocol') or 'plain') + ',' + s.get('client_io', '?'))"
}
row() { # label kind peer-command...
  local label=$1 kind=$2; shift 2
  local tr=() cr=()
  use "$kind"
  for i in $(seq "$ROUNDS"); do
    read -r a_tps a_cpu a_tx proto < <("${CSD_CMD[@]}")
    read -r b_tps b_cpu b_tx _ < <("$@")
    tr+=("$(ratio "$a_tps/$b_tps")"); cr+=("$(ratio "($a_cpu/$a_tx)/($b_cpu/$b_tx)")")
    printf '  %s %s round %d: csdchar %8.1f tps %.3f ms cpu/tx (%s) | peer %8.1f tps %.3f ms cpu/tx\n' "$label" "$kind" "$i" \
      "$a_tps" "$(python3 -c "print($a_cpu/$a_tx*1000)")" "$proto" "$b_tps" "$(python3 -c "print($b_cpu/$b_tx*1000)")"
  done
  printf '%s %s: TPS ratio %s (%s), client CPU per transaction ratio %s (%s)\n' "$label" "$kind" \
    "$(med "${tr[@]}")" "${tr[*]}" "$(med "${cr[@]}")" "${cr[*]}"
}
for kind in tls plain; do
  for c in $CLIENTS; do
    CSD_CMD=(csd_run tpcb "$c" --scale "$SCALE" --protocol prepared)
    row "tpcb $c clients vs pgbench -M prepared" "$kind" pg_run "$c"
  done
  if [ "${SYSBENCH:-1}" = 1 ] && command -v sysbench >/dev/null; then
    CSD_CMD=(csd_run oltp-read-write "$SB_THREADS" --tables "$TABLES" --table-size "$TABLE_SIZE")
    row "oltp_read_write $SB_THREADS threads vs sysbench" "$kind" sb_run oltp_read_write "$SB_THREADS"
  fi
done
