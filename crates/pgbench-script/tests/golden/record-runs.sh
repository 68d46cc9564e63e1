#!/usr/bin/env bash
# Records what pgbench 15 does with tests/runs/*.sql (options in NAME.args) against a
# throwaway cluster: its debug() lines and other stderr, and the statements the server
# logs (log_statement = all, SQLSTATE first) -> tests/golden/runs.txt, which
# tests/runs.rs compares the interpreter with. Run as root (initdb runs as postgres);
# the cluster and its directory are removed on exit, even on failure.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin=/usr/lib/postgresql/15/bin
dir=$(mktemp -d /var/tmp/csdchar-pgbench-golden.XXXXXX)
chown postgres "$dir"
as_pg() { su postgres -s /bin/sh -c "$*"; }
cleanup() {
  as_pg "$bin/pg_ctl -D '$dir/data' -m immediate stop" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
as_pg "$bin/initdb -D '$dir/data' -A trust --locale C -E UTF8" >/dev/null
as_pg "$bin/pg_ctl -D '$dir/data' -w -l '$dir/server.log' -o \"-k '$dir' -c listen_addresses='' -c log_statement=all -c log_line_prefix='%e ' -c log_min_error_statement=error\" start" >/dev/null
out="$here/golden/runs.txt"
echo "# pgbench 15.18 on tests/runs/*.sql (golden/record-runs.sh): stderr lines, then the server's log of each statement (SQLSTATE first)." > "$out"
cp "$here"/runs/*.sql "$dir"/ && chown postgres "$dir"/*.sql
for args in "$here"/runs/*.args; do
  name=$(basename "$args" .args)
  before=$(stat -c %s "$dir/server.log")
  set +e
  err=$(cd "$dir" && su postgres -s /bin/sh -c "$bin/pgbench -h '$dir' -n $(cat "$args") postgres" 2>&1 >"$dir/stdout")
  status=$?
  set -e
  sleep 0.3
  {
    echo "== $name"
    echo "exit $status"
    { grep -E 'processed:' "$dir/stdout" || true; } | sed 's/^/stdout /'
    { printf '%s\n' "$err" | grep -v -E '^$|^pgbench \(|^starting vacuum|setting random seed' || true; } | sed 's/^/stderr /'
    { tail -c +"$((before + 1))" "$dir/server.log" | grep -v -E '^00000 LOG:  (connection|disconnection)' || true; } | sed 's/^/log /'
  } >> "$out"
done
