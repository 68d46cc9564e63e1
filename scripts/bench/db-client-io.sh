#!/usr/bin/env bash
# csdchar's database client drivers (--client-io uring vs threads) against sysbench and
# pgbench -M prepared on one PostgreSQL cluster, alternating per round: csdchar uring,
# csdchar threads, the peer. Reports per configuration the medians (rounds in brackets) of
#   TPS ratio uring/threads and uring/peer, and client CPU per transaction ratio uring/peer and
#   threads/peer (client CPU = user+sys of the client process from /usr/bin/time / transactions;
#   the server is not the client's child);
# then client max RSS at RSS_CLIENTS clients (oltp_read_write) for both drivers and sysbench.
# Needs a csdchar whose `db run` passes --client-io/--client-threads to runner::run_with.
# Usage: scripts/bench/db-client-io.sh
#   env: ROUNDS=3 TIME=10 THREADS="8 16 64" CLIENTS="1 8 32" TABLES=4 TABLE_SIZE=100000 SCALE=20
#        WORKLOADS="oltp_read_write oltp_read_only oltp_point_select" RSS_CLIENTS=1000
#        CLIENT_THREADS= (uring driver threads; default one per 32 clients, at most one per core)
#        ONLY=sysbench|tpcb|rss  TRANSPORT=unix|tcp (tcp: the cluster listens on 127.0.0.1 and every
#        client, csdchar and peer, connects there with the cluster's password; unix: its socket)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}; TIME=${TIME:-10}; THREADS=${THREADS:-8 16 64}; CLIENTS=${CLIENTS:-1 8 32}
TABLES=${TABLES:-4}; TABLE_SIZE=${TABLE_SIZE:-100000}; SCALE=${SCALE:-20}
WORKLOADS=${WORKLOADS:-oltp_read_write oltp_read_only oltp_point_select}
RSS_CLIENTS=${RSS_CLIENTS:-1000}; ONLY=${ONLY:-}; TRANSPORT=${TRANSPORT:-unix}
command -v sysbench >/dev/null || { apt-get update -qq && apt-get install -y -qq sysbench >/dev/null; }
cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
DIR=$(mktemp -d /var/tmp/csdchar-clientio.XXXX)
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
PGDATA=$DIR/pgdata
LISTEN=(); [ "$TRANSPORT" = tcp ] && LISTEN=(--listen 127.0.0.1)
"$CSD" db prepare --pgdata "$PGDATA" "${LISTEN[@]}" --keep-running --tables "$TABLES" --table-size "$TABLE_SIZE" \
  --pg-set shared_buffers=512MB --pg-set max_connections=$((RSS_CLIENTS + 100)) \
  --pg-set max_wal_size=4GB --pg-set checkpoint_timeout=30min >/dev/null
PORT=$(sed -n 4p "$PGDATA/postmaster.pid")
if [ "$TRANSPORT" = tcp ]; then
  # --listen: password authentication on 127.0.0.1 (the cluster's generated password).
  SOCK=127.0.0.1
  PGPASSWORD=$(cut -d: -f5 "$PGDATA/csdchar-password"); export PGPASSWORD
  URL="host=127.0.0.1 port=$PORT user=postgres password=$PGPASSWORD dbname=postgres sslmode=disable"
  export PGSSLMODE=disable
else
  # Managed clusters listen on their private Unix socket only; every client uses it.
  SOCK=$(sed -n 5p "$PGDATA/postmaster.pid")
  URL="host=$SOCK port=$PORT user=postgres dbname=postgres"
fi
BIN=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
stop() { if [ "$(id -u)" = 0 ]; then su postgres -c "$BIN/pg_ctl stop -m fast -D $PGDATA" >/dev/null; else "$BIN/pg_ctl" stop -m fast -D "$PGDATA" >/dev/null; fi; rm -rf "$DIR"; }
trap stop EXIT
export PGHOST=$SOCK PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
# --client-threads is the ring driver's: passed with --client-io uring only.
ct() { [ "$1" = uring ] && [ -n "${CLIENT_THREADS:-}" ] && echo "--client-threads $CLIENT_THREADS"; true; }

ratio() { python3 -c "print(f'{$1:.3f}')"; }
med() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($#+1)/2 ))p"; }
# sb_run and pg_run: the peers.
PGBENCH=$BIN/pgbench
. scripts/bench/peers.sh
# Prints "tps cpu_seconds transactions max_rss_kb" of the csdchar JSON result in $DIR/o.
csd_result() {
  python3 -c "import json; r=json.load(open('$DIR/o')); t=open('$DIR/t').read().split(); s=r['steps'][0]; print(s['tps'], float(t[0])+float(t[1]), s['transactions'], t[2])"
}
csd_sb() { # io workload threads
  local io=$1 w=$2 th=$3
  /usr/bin/time -f "%U %S %M" -o "$DIR/t" "$CSD" db run --url "$URL" --workload "${w//_/-}" \
    --tables "$TABLES" --table-size "$TABLE_SIZE" --threads "$th" --time "${TIME}s" --report-interval 0 \
    --client-io "$io" $(ct "$io") --output-format json > "$DIR/o"
  csd_result
}
csd_tpcb() { # io clients
  /usr/bin/time -f "%U %S %M" -o "$DIR/t" "$CSD" db run --url "$URL" --workload tpcb --scale "$SCALE" \
    --protocol prepared --threads "$2" --time "${TIME}s" --report-interval 0 \
    --client-io "$1" $(ct "$1") --output-format json > "$DIR/o"
  csd_result
}
# compare LABEL PEER_NAME CSD_FN PEER_FN ARGS...: alternating rounds and the medians.
compare() {
  local label=$1 peer=$2 cfn=$3 pfn=$4; shift 4
  local ut=() up=() uc=() tc=()
  for r in $(seq "$ROUNDS"); do
    read -r u_tps u_cpu u_tx _ < <("$cfn" uring "$@")
    read -r t_tps t_cpu t_tx _ < <("$cfn" threads "$@")
    read -r p_tps p_cpu p_tx _ < <("$pfn" "$@")
    ut+=("$(ratio "$u_tps/$t_tps")"); up+=("$(ratio "$u_tps/$p_tps")")
    uc+=("$(ratio "($u_cpu/$u_tx)/($p_cpu/$p_tx)")"); tc+=("$(ratio "($t_cpu/$t_tx)/($p_cpu/$p_tx)")")
    printf '  %-28s round %d: uring %8.1f tps %6.2fs cpu | threads %8.1f tps %6.2fs cpu | %s %8.1f tps %6.2fs cpu\n' \
      "$label" "$r" "$u_tps" "$u_cpu" "$t_tps" "$t_cpu" "$peer" "$p_tps" "$p_cpu"
  done
  printf '%-28s TPS uring/threads %s (%s), uring/%s %s (%s); CPU/tx uring/%s %s (%s), threads/%s %s (%s)\n' \
    "$label" "$(med "${ut[@]}")" "${ut[*]}" "$peer" "$(med "${up[@]}")" "${up[*]}" \
    "$peer" "$(med "${uc[@]}")" "${uc[*]}" "$peer" "$(med "${tc[@]}")" "${tc[*]}"
}

if [ -z "$ONLY" ] || [ "$ONLY" = sysbench ]; then
  for w in $WORKLOADS; do
    for th in $THREADS; do compare "$w $th threads" sysbench csd_sb sb_run "$w" "$th"; done
  done
fi
if [ -z "$ONLY" ] || [ "$ONLY" = tpcb ]; then
  "$CSD" db prepare --url "$URL" --workload tpcb --scale "$SCALE" --force >/dev/null 2>&1
  # compare passes "uring|threads CLIENTS" to csd_tpcb and "CLIENTS" to pg_run.
  for c in $CLIENTS; do compare "tpcb-like $c clients" pgbench csd_tpcb pg_run "$c"; done
fi
if [ -z "$ONLY" ] || [ "$ONLY" = rss ]; then
  for io in uring threads; do
    read -r tps _ _ rss < <(csd_sb "$io" oltp_read_write "$RSS_CLIENTS")
    printf 'oltp_read_write at %d clients: csdchar --client-io %-7s max RSS %7.1f MB (%.0f tps)\n' \
      "$RSS_CLIENTS" "$io" "$(ratio "$rss/1024")" "$tps"
  done
  read -r tps _ _ rss < <(sb_run oltp_read_write "$RSS_CLIENTS")
  printf 'oltp_read_write at %d clients: sysbench                 max RSS %7.1f MB (%.0f tps)\n' \
    "$RSS_CLIENTS" "$(ratio "$rss/1024")" "$tps"
fi
