# Sourced by the peer comparisons (db-vs-sysbench.sh, db-client-io.sh, tpcb-vs-pgbench.sh): one
# run of sysbench or pgbench against the cluster the script set up, timed by /usr/bin/time.
# Each prints "tps client_cpu_seconds transactions max_rss_kib".
# sb_run needs DIR, TIME, SOCK, PORT, TABLES, TABLE_SIZE; pg_run needs DIR, TIME, PGBENCH and
# the PG* environment (host, port, user, database) pointing at the cluster.
sb_run() { # workload threads
  /usr/bin/time -f "%U %S %M" -o "$DIR/t" sysbench "$1" --db-driver=pgsql --pgsql-host="$SOCK" --pgsql-port="$PORT" \
    --pgsql-user=postgres --pgsql-db=postgres --tables="$TABLES" --table-size="$TABLE_SIZE" --threads="$2" \
    --time="$TIME" --rand-type=uniform run > "$DIR/o"
  python3 - "$DIR" <<'PY'
import re, sys
d = sys.argv[1]
o = open(d + "/o").read(); t = open(d + "/t").read().split()
m = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", o)
print(m.group(2), float(t[0]) + float(t[1]), m.group(1), t[2])
PY
}
pg_run() { # clients
  /usr/bin/time -f "%U %S %M" -o "$DIR/t" "$PGBENCH" -M prepared -n -c "$1" -j "$1" -T "$TIME" > "$DIR/o" 2>/dev/null
  python3 - "$DIR" <<'PY'
import re, sys
d = sys.argv[1]
o = open(d + "/o").read(); t = open(d + "/t").read().split()
tx = re.search(r"number of transactions actually processed: (\d+)", o).group(1)
tps = re.search(r"tps = ([\d.]+)", o).group(1)
print(tps, float(t[0]) + float(t[1]), tx, t[2])
PY
}
