#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests (Debian's `postgresql` package, installed by `make deps`).
#
#   postgres-test-cluster.sh start DIR [--owner PID]   initdb into DIR/data, start it, print its DSN on stdout
#   postgres-test-cluster.sh stop DIR                  stop it at once (pg_ctl -m immediate) and remove DIR
#   postgres-test-cluster.sh run CMD [ARG...]          start one in a new temporary folder, run CMD with
#                                                      OFFER_SIGNER_TEST_POSTGRES set to its DSN, stop it
#                                                      whatever CMD does (failure, Ctrl-C, SIGTERM)
#
# The cluster listens on 127.0.0.1 on a free port and on a Unix socket in DIR. The superuser `postgres` needs no
# password (local socket and loopback); every other role must log in over loopback with a SCRAM password, so the
# tests can check password handling. fsync stays on: durability tests must see what production sees.
# PostgreSQL refuses to run as root: as root the cluster runs as the `postgres` OS user, which owns DIR.
# With --owner PID a watchdog stops the cluster when that process ends, so a test run that is killed leaves no
# server behind.
# Diagnostics go to stderr; the server's log is DIR/log.
set -euo pipefail

script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
marker=".offer-signer-test-cluster"

fail() {
    echo "postgres-test-cluster: $*" >&2
    exit 1
}

# The newest installed server's binaries (/usr/lib/postgresql/<major>/bin), or PG_BIN when set.
find_binaries() {
    if [ -n "${PG_BIN:-}" ]; then
        echo "$PG_BIN"
        return
    fi
    local newest
    newest="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    [ -n "$newest" ] && [ -x "$newest/initdb" ] ||
        fail "no PostgreSQL server found in /usr/lib/postgresql: run 'make deps' (installs Debian's postgresql)"
    echo "$newest"
}

# Runs a command as the cluster's owner: `postgres` when we are root, else ourselves.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The server and the watchdog outlive this script: they must not hold the caller's descriptors (a test harness
# waits for its child's pipes or sockets to close; make passes its jobserver's).
close_inherited_descriptors() {
    local path fd
    for path in /proc/self/fd/*; do
        fd="${path##*/}"
        # The folder's own descriptor, open while the glob was read, is gone by now: -L skips it.
        case "$fd" in 0 | 1 | 2 | 255) ;; *) if [ -L "$path" ]; then eval "exec $fd>&-"; fi ;; esac
    done
}

start() {
    local dir="$1" owner="${2:-}"
    close_inherited_descriptors
    local bin
    bin="$(find_binaries)"
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    [ -z "$(ls -A "$dir")" ] || fail "$dir is not empty: give a new or empty folder"
    touch "$dir/$marker"
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 ||
            abandon "$dir" "no 'postgres' OS user: run 'make deps' (installs Debian's postgresql)"
        chown -R postgres: "$dir"
        as_owner test -x "$dir" ||
            abandon "$dir" "the postgres user cannot enter $dir (a parent folder is closed to it): use one under /tmp"
    fi
    as_owner "$bin/initdb" --pgdata="$dir/data" --username=postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
        >"$dir/initdb.log" 2>&1 || {
        cat "$dir/initdb.log" >&2
        abandon "$dir" "initdb failed"
    }
    # First match wins: the superuser without a password, every other role with one.
    as_owner tee "$dir/data/pg_hba.conf" >/dev/null <<'EOF'
local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
EOF
    local port attempt
    for attempt in 1 2 3 4 5; do
        port="$(free_port)"
        # -l: without a log file pg_ctl keeps our stdout open and whoever reads it waits for ever.
        if as_owner "$bin/pg_ctl" --pgdata="$dir/data" --log="$dir/log" --wait --timeout=60 --silent \
            -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=on" start \
            >/dev/null 2>&1; then
            local dsn="postgresql://postgres@127.0.0.1:$port/postgres"
            echo "$dsn" >"$dir/dsn"
            if [ -n "$owner" ]; then watchdog "$dir" "$owner"; fi
            echo "$dsn"
            return
        fi
        grep -q "could not bind\|Address already in use" "$dir/log" 2>/dev/null || break
    done
    cat "$dir/log" >&2 2>/dev/null || true
    abandon "$dir" "the server did not start (its log is above)"
}

# Removes a cluster that could not be started, then fails.
abandon() {
    stop "$1"
    fail "$2"
}

# Stops the cluster in DIR when process OWNER ends; detached, so it outlives this script.
watchdog() {
    local dir="$1" owner="$2"
    (
        trap '' HUP INT
        while kill -0 "$owner" 2>/dev/null && [ -e "$dir/$marker" ]; do sleep 1; done
        [ -e "$dir/$marker" ] && "$script" stop "$dir"
    ) </dev/null >/dev/null 2>&1 &
    disown
}

stop() {
    local dir="$1"
    [ -d "$dir" ] || return 0
    # Only ever remove a folder this script made.
    [ -e "$dir/$marker" ] || fail "$dir was not made by this script: not removing it"
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$(find_binaries)/pg_ctl" --pgdata="$dir/data" --mode=immediate --wait --silent stop \
            >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}

run() {
    [ $# -gt 0 ] || fail "run needs a command"
    local dir status=0
    dir="$(mktemp -d /tmp/offer-signer-postgres.XXXXXX)"
    trap 'stop "$dir"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    OFFER_SIGNER_TEST_POSTGRES="$(start "$dir" $$)"
    export OFFER_SIGNER_TEST_POSTGRES
    echo "PostgreSQL for the tests: $OFFER_SIGNER_TEST_POSTGRES" >&2
    "$@" || status=$?
    exit "$status"
}

case "${1:-}" in
    start)
        [ $# -ge 2 ] || fail "usage: $0 start DIR [--owner PID]"
        if [ "${3:-}" = "--owner" ]; then start "$2" "${4:?--owner needs a process ID}"; else start "$2"; fi
        ;;
    stop)
        [ $# -eq 2 ] || fail "usage: $0 stop DIR"
        stop "$2"
        ;;
    run)
        shift
        run "$@"
        ;;
    *) fail "usage: $0 start DIR [--owner PID] | stop DIR | run CMD [ARG...]" ;;
esac
