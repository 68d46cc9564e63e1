#!/usr/bin/env bash
# csdchar db run vs sysbench 1.x on the same PostgreSQL cluster and tables,
# alternating csdchar, csdchar --pipeline, sysbench: TPS ratio and client CPU
# per transaction ratio (user+sys of the client process / transactions; the
# server is not the client's child). Then client RSS at RSS_THREADS clients.
# With LOAD_TABLES and LOAD_SIZE set, first the load: `csdchar db prepare` vs `sysbench prepare`
# of LOAD_TABLES tables × LOAD_SIZE rows (secondary index k_1 in both), LOAD_THREADS connections
# each, alternating, in a schema of their own each; ONLY=load stops after it.
# Usage: scripts/bench/db-vs-sysbench.sh
#   env: ROUNDS=3 TIME=10 THREADS=8 TABLES=4 TABLE_SIZE=100000 WORKLOADS="..." RSS_THREADS=256
#        LOAD_TABLES= LOAD_SIZE= LOAD_THREADS=2 ONLY=
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}; TIME=${TIME:-10}; THREADS=${THREADS:-8}; TABLES=${TABLES:-4}; TABLE_SIZE=${TABLE_SIZE:-100000}
command -v sysbench >/dev/null || { apt-get update -qq && apt-get install -y -qq sysbench >/dev/null; }
cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
DIR=$(mktemp -d /var/tmp/csdchar-dbbench.XXXX)
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
PGDATA=$DIR/pgdata
# One cluster for both, left running between the runs, stopped at the end.
"$CSD" db prepare --pgdata "$PGDATA" --keep-running --tables "$TABLES" --table-size "$TABLE_SIZE" \
  --pg-set shared_buffers=256MB --pg-set max_connections=300 >/dev/null
PORT=$(sed -n 4p "$PGDATA/postmaster.pid")
# Managed clusters listen on their private Unix socket only; every client uses it.
SOCK=$(sed -n 5p "$PGDATA/postmaster.pid")
BIN=$(pg_config --bindir)
stop() { if [ "$(id -u)" = 0 ]; then su postgres -c "$BIN/pg_ctl stop -m fast -D $PGDATA" >/dev/null; else "$BIN/pg_ctl" stop -m fast -D "$PGDATA" >/dev/null; fi; rm -rf "$DIR"; }
trap stop EXIT
URL="host=$SOCK port=$PORT user=postgres dbname=postgres"

# sb_run: the peer.
. scripts/bench/peers.sh
# Prints "tps cpu_seconds transactions max_rss_kb".
csd_run() { # workload threads [extra options]
  local w=$1 th=$2; shift 2
  /usr/bin/time -f "%U %S %M" -o "$DIR/t" "$CSD" db run --url "$URL" --workload "${w//_/-}" --tables "$TABLES" \
    --table-size "$TABLE_SIZE" --threads "$th" --time "${TIME}s" --report-interval 0 --output-format json "$@" > "$DIR/o"
  python3 -c "import json; r=json.load(open('$DIR/o')); t=open('$DIR/t').read().split(); print(r['steps'][0]['tps'], float(t[0])+float(t[1]), r['steps'][0]['transactions'], t[2])"
}
ratio() { python3 -c "print(f'{$1:.3f}')"; }
med() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($#+1)/2 ))p"; }
timed() { local t0 t1; t0=$(date +%s.%N); "$@" >"$DIR/load.log" 2>&1 || { cat "$DIR/load.log" >&2; exit 1; }
  t1=$(date +%s.%N); python3 -c "print(f'{$t1-$t0:.3f}')"; }
if [ -n "${LOAD_TABLES:-}" ]; then
  LOAD_SIZE=${LOAD_SIZE:?LOAD_SIZE: rows per table}; LOAD_THREADS=${LOAD_THREADS:-2}
  PSQL=("$BIN/psql" -h "$SOCK" -p "$PORT" -U postgres -d postgres -qAt)
  "${PSQL[@]}" -c "CREATE SCHEMA IF NOT EXISTS sbload"
  lr=()
  for r in $(seq "$ROUNDS"); do
    a=$(timed "$CSD" db prepare --url "$URL" --schema csdload --tables "$LOAD_TABLES" --table-size "$LOAD_SIZE" \
      --threads "$LOAD_THREADS" --force)
    "$CSD" db cleanup --url "$URL" --schema csdload >/dev/null 2>&1
    # sysbench's tables in their own schema: the role's search_path puts it first.
    "${PSQL[@]}" -c "ALTER ROLE postgres SET search_path = sbload"
    b=$(timed sysbench oltp_read_write --db-driver=pgsql --pgsql-host="$SOCK" --pgsql-port="$PORT" \
      --pgsql-user=postgres --pgsql-db=postgres --tables="$LOAD_TABLES" --table-size="$LOAD_SIZE" \
      --threads="$LOAD_THREADS" prepare)
    sysbench oltp_read_write --db-driver=pgsql --pgsql-host="$SOCK" --pgsql-port="$PORT" --pgsql-user=postgres \
      --pgsql-db=postgres --tables="$LOAD_TABLES" cleanup >/dev/null 2>&1
    "${PSQL[@]}" -c "ALTER ROLE postgres RESET search_path"
    lr+=("$(ratio "$a/$b")")
    printf '  load %d x %d rows round %d: csdchar db prepare %6.2fs | sysbench prepare %6.2fs\n' \
      "$LOAD_TABLES" "$LOAD_SIZE" "$r" "$a" "$b"
  done
  printf 'load %d tables x %d rows, %d connections: time ratio csdchar/sysbench %s (%s)\n' \
    "$LOAD_TABLES" "$LOAD_SIZE" "$LOAD_THREADS" "$(med "${lr[@]}")" "${lr[*]}"
fi
[ "${ONLY:-}" = load ] && exit 0
for w in ${WORKLOADS:-oltp_read_only oltp_read_write oltp_point_select}; do
  tr=(); cr=(); ptr=(); pcr=()
  for r in $(seq "$ROUNDS"); do
    read -r a_tps a_cpu a_tx _ < <(csd_run "$w" "$THREADS")
    read -r p_tps p_cpu p_tx _ < <(csd_run "$w" "$THREADS" --pipeline)
    read -r b_tps b_cpu b_tx _ < <(sb_run "$w" "$THREADS")
    tr+=("$(ratio "$a_tps/$b_tps")"); cr+=("$(ratio "($a_cpu/$a_tx)/($b_cpu/$b_tx)")")
    ptr+=("$(ratio "$p_tps/$b_tps")"); pcr+=("$(ratio "($p_cpu/$p_tx)/($b_cpu/$b_tx)")")
    printf '  %-18s round %d: csdchar %8.1f tps %6.2fs cpu | --pipeline %8.1f tps %6.2fs cpu | sysbench %8.1f tps %6.2fs cpu\n' \
      "$w" "$r" "$a_tps" "$a_cpu" "$p_tps" "$p_cpu" "$b_tps" "$b_cpu"
  done
  printf '%-18s csdchar/sysbench: TPS %s (%s), client CPU per transaction %s (%s)\n' \
    "$w" "$(med "${tr[@]}")" "${tr[*]}" "$(med "${cr[@]}")" "${cr[*]}"
  printf '%-18s csdchar --pipeline/sysbench: TPS %s (%s), client CPU per transaction %s (%s)\n' \
    "$w" "$(med "${ptr[@]}")" "${ptr[*]}" "$(med "${pcr[@]}")" "${pcr[*]}"
done
RSS_THREADS=${RSS_THREADS:-256}
if [ "$RSS_THREADS" -gt 0 ]; then
  read -r a_tps _ _ a_rss < <(csd_run oltp_read_write "$RSS_THREADS")
  read -r b_tps _ _ b_rss < <(sb_run oltp_read_write "$RSS_THREADS")
  printf 'oltp_read_write at %d clients: csdchar max RSS %.1f MB (%.0f tps), sysbench %.1f MB (%.0f tps)\n' \
    "$RSS_THREADS" "$(ratio "$a_rss/1024")" "$a_tps" "$(ratio "$b_rss/1024")" "$b_tps"
fi