#!/usr/bin/env bash
# csdchar's TPC-B vs pgbench on the same PostgreSQL cluster, alternating:
#  1. load time: `csdchar db prepare --workload tpcb` vs `pgbench -i` at SCALE, client-side
#     (binary COPY vs pgbench's COPY, steps dtgvp) and server-side (--init-mode server vs -I dtGvp);
#  2. TPS and client CPU per transaction (user+sys of the client process / transactions) at
#     CLIENTS clients, csdchar --protocol prepared vs pgbench -M prepared -n (no vacuum before the run).
# Usage: scripts/bench/tpcb-vs-pgbench.sh     env: ROUNDS=3 SCALE=20 TIME=10 CLIENTS="1 8"
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}; SCALE=${SCALE:-20}; TIME=${TIME:-10}; CLIENTS=${CLIENTS:-1 8}
cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
DIR=$(mktemp -d /var/tmp/csdchar-tpcbbench.XXXX)
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
PGDATA=$DIR/pgdata
"$CSD" db prepare --workload tpcb --scale 1 --pgdata "$PGDATA" --keep-running \
  --pg-set shared_buffers=512MB --pg-set max_wal_size=4GB --pg-set checkpoint_timeout=30min >/dev/null 2>&1
PORT=$(sed -n 4p "$PGDATA/postmaster.pid")
# Managed clusters listen on their private Unix socket only; every client uses it.
SOCK=$(sed -n 5p "$PGDATA/postmaster.pid")
BIN=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PGBENCH=$BIN/pgbench
stop() { if [ "$(id -u)" = 0 ]; then su postgres -c "$BIN/pg_ctl stop -m fast -D $PGDATA" >/dev/null; else "$BIN/pg_ctl" stop -m fast -D "$PGDATA" >/dev/null; fi; rm -rf "$DIR"; }
trap stop EXIT
URL="host=$SOCK port=$PORT user=postgres dbname=postgres"
export PGHOST=$SOCK PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
ratio() { python3 -c "print(f'{$1:.3f}')"; }
med() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($#+1)/2 ))p"; }
# sb_run and pg_run.
. scripts/bench/peers.sh
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); python3 -c "print(f'{$t1-$t0:.3f}')"; }

for mode in client server; do
  if [ "$mode" = client ]; then csd_extra=(); pg_steps=dtgvp; else csd_extra=(--init-mode server); pg_steps=dtGvp; fi
  r=()
  for i in $(seq "$ROUNDS"); do
    a=$(secs "$CSD" db prepare --url "$URL" --workload tpcb --scale "$SCALE" --force "${csd_extra[@]}")
    b=$(secs "$PGBENCH" -i -I "$pg_steps" -s "$SCALE" -q)
    r+=("$(ratio "$a/$b")")
    printf '  load %-6s scale %d round %d: csdchar %6.2fs | pgbench -i -I %s %6.2fs\n' "$mode" "$SCALE" "$i" "$a" "$pg_steps" "$b"
  done
  printf 'load %-6s scale %d: time ratio csdchar/pgbench median %s (%s)\n' "$mode" "$SCALE" "$(med "${r[@]}")" "${r[*]}"
done

# Prints "tps cpu_seconds transactions" (pg_run adds max RSS).
csd_run() {
  /usr/bin/time -f "%U %S" -o "$DIR/t" "$CSD" db run --url "$URL" --workload tpcb --scale "$SCALE" --protocol prepared \
    --threads "$1" --time "${TIME}s" --report-interval 0 --output-format json > "$DIR/o"
  python3 -c "import json; r=json.load(open('$DIR/o')); t=open('$DIR/t').read().split(); print(r['steps'][0]['tps'], float(t[0])+float(t[1]), r['steps'][0]['transactions'])"
}
"$CSD" db prepare --url "$URL" --workload tpcb --scale "$SCALE" --force >/dev/null 2>&1
for c in $CLIENTS; do
  tr=(); cr=()
  for i in $(seq "$ROUNDS"); do
    read -r a_tps a_cpu a_tx < <(csd_run "$c")
    read -r b_tps b_cpu b_tx _ < <(pg_run "$c")
    tr+=("$(ratio "$a_tps/$b_tps")"); cr+=("$(ratio "($a_cpu/$a_tx)/($b_cpu/$b_tx)")")
    printf '  tpcb-like %d client(s) round %d: csdchar %8.1f tps %6.2fs cpu | pgbench -M prepared %8.1f tps %6.2fs cpu\n' \
      "$c" "$i" "$a_tps" "$a_cpu" "$b_tps" "$b_cpu"
  done
  printf 'tpcb-like %d client(s): TPS ratio %s (%s), client CPU per transaction ratio %s (%s)\n' \
    "$c" "$(med "${tr[@]}")" "${tr[*]}" "$(med "${cr[@]}")" "${cr[*]}"
done
