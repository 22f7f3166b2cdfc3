#!/usr/bin/env bash
# pg-test-cluster.sh — PostgreSQL 15 + pgvector for echogate's tests: installer and throwaway cluster.
#
# Usage:
#   scripts/pg-test-cluster.sh install   # idempotent: apt-get postgresql-15 and pgbouncer (+ build pgvector if missing)
#   scripts/pg-test-cluster.sh start     # start a throwaway cluster and a PgBouncer (transaction mode) in front of it;
#                                        # prints `export DATABASE_URL=…` and `export ECHOGATE_TEST_PGBOUNCER_URL=…`
#   scripts/pg-test-cluster.sh stop      # stop both and delete the data directory
#   scripts/pg-test-cluster.sh status    # print the URLs of the running cluster and pooler, exit 1 if none
#
# Developers:
#   sudo scripts/pg-test-cluster.sh install
#   eval "$(scripts/pg-test-cluster.sh start)"
#   go test -race ./storage/postgres/
#   scripts/pg-test-cluster.sh stop
#
# The cluster is for tests only: it listens on 127.0.0.1 on a free port, runs with fsync,
# synchronous_commit and full_page_writes off (a crash loses it, which is fine: it is thrown away),
# and authenticates with a random password (scram-sha-256) printed in the URL. pg_stat_statements is
# preloaded (CREATE EXTENSION pg_stat_statements to read it; bench/realpath does).
#
# PgBouncer (Debian's package) runs in pool_mode = transaction on another free loopback port, with a
# wildcard database entry: postgres://…@127.0.0.1:<port>/<any database>. Its URL, printed as
# ECHOGATE_TEST_PGBOUNCER_URL, is what the tests use to run the store through a pooler
# (database.pooler: transaction). PgBouncer 1.18 does not pass search_path on: through it, tests use a
# database of their own rather than a schema. `start` on a running cluster starts a missing pooler.
#
# Install needs root (or sudo). When the `vector` extension is not installed and no
# postgresql-15-pgvector package is available (Debian bookworm has none), pgvector is built from
# Debian trixie's source package, fetched through a private apt source list that never touches the
# system's apt configuration.
#
# Environment:
#   PG_MAJOR            PostgreSQL major version (default 15)
#   PG_TEST_STATE_FILE  where `start` records the running cluster (default /tmp/echogate-pg-test.env)
#   PG_TEST_DB          database created by `start` (default echogate_test)
#   PG_TEST_PORT        port to use instead of searching a free one from 55432 up
#   PG_TEST_PGBOUNCER   0 to start no PgBouncer (default 1 when /usr/sbin/pgbouncer exists)
#   PG_TEST_PGBOUNCER_PORT  first port tried for PgBouncer (default 56432)
set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}
PG_BIN=/usr/lib/postgresql/${PG_MAJOR}/bin
PG_CONFIG=${PG_BIN}/pg_config
PG_SHARE=/usr/share/postgresql/${PG_MAJOR}
STATE_FILE=${PG_TEST_STATE_FILE:-/tmp/echogate-pg-test.env}
DB_NAME=${PG_TEST_DB:-echogate_test}
TRIXIE_SRC="deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main"

log() { printf 'pg-test-cluster: %s\n' "$*" >&2; }
die() {
	printf 'pg-test-cluster: error: %s\n' "$*" >&2
	exit 1
}

BUILD_DIR=
cleanup() {
	if [[ -n "$BUILD_DIR" ]]; then rm -rf "$BUILD_DIR"; fi
}
trap cleanup EXIT

usage() {
	sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# ---------------------------------------------------------------------------------------------
# install

pkg_installed() {
	[[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

have_vector() {
	[[ -f "${PG_SHARE}/extension/vector.control" ]]
}

APT_UPDATED=0
apt_install() {
	local missing=()
	local p
	for p in "$@"; do
		pkg_installed "$p" || missing+=("$p")
	done
	((${#missing[@]} == 0)) && return 0
	if ((APT_UPDATED == 0)); then
		log "apt-get update"
		apt-get update -q >&2
		APT_UPDATED=1
	fi
	log "apt-get install ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

build_pgvector_from_trixie() {
	local work
	work=$(mktemp -d /tmp/echogate-pgvector.XXXXXX)
	BUILD_DIR=$work # removed by the EXIT trap, also when the build fails
	mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
	printf '%s\n' "$TRIXIE_SRC" >"$work/trixie-src.list"
	local apt_opts=(
		-o "Dir::Etc::SourceList=$work/trixie-src.list"
		-o "Dir::Etc::SourceParts=/dev/null"
		-o "Dir::State::Lists=$work/lists"
		-o "Dir::Cache=$work/cache" # the system's package cache is not rebuilt from trixie's lists
		-o "APT::Sandbox::User=root" # a private root-owned temp dir: _apt cannot write it
	)
	log "fetching pgvector source from Debian trixie (private apt lists in $work)"
	apt-get "${apt_opts[@]}" update -q >&2
	(cd "$work" && apt-get "${apt_opts[@]}" source -q pgvector >&2)
	local src
	src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n1)
	[[ -n "$src" ]] || die "apt-get source pgvector produced no pgvector-* directory in $work"
	log "building $(basename "$src") against ${PG_CONFIG}"
	# OPTFLAGS="" keeps the build portable (pgvector defaults to -march=native).
	make -C "$src" -j"$(nproc)" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >&2
	make -C "$src" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" install >&2
	have_vector || die "pgvector built but ${PG_SHARE}/extension/vector.control is missing"
	rm -rf "$work"
	BUILD_DIR=
}

cmd_install() {
	command -v apt-get >/dev/null || die "apt-get not found: this installer supports Debian/Ubuntu only"
	local need=(postgresql-${PG_MAJOR} postgresql-client-${PG_MAJOR} pgbouncer)
	if ((EUID != 0)); then
		local p
		for p in "${need[@]}"; do
			pkg_installed "$p" || die "package $p is missing; run: sudo $0 install"
		done
		have_vector || die "the pgvector extension is missing; run: sudo $0 install"
		log "postgresql-${PG_MAJOR}, pgbouncer and pgvector already installed"
		return 0
	fi
	apt_install "${need[@]}"
	if have_vector; then
		log "postgresql-${PG_MAJOR}, pgbouncer and pgvector ready ($(grep -h default_version "${PG_SHARE}/extension/vector.control" | tr -d "' "))"
		return 0
	fi
	# A packaged pgvector (e.g. from apt.postgresql.org) is preferred when the system has one.
	if ((APT_UPDATED == 0)); then
		apt-get update -q >&2
		APT_UPDATED=1
	fi
	if apt-cache policy "postgresql-${PG_MAJOR}-pgvector" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
		apt_install "postgresql-${PG_MAJOR}-pgvector"
	else
		apt_install "postgresql-server-dev-${PG_MAJOR}" build-essential dpkg-dev
		build_pgvector_from_trixie
	fi
	have_vector || die "pgvector is still missing after install"
	log "postgresql-${PG_MAJOR}, pgbouncer and pgvector ready"
}

# ---------------------------------------------------------------------------------------------
# start / stop

# as_pg runs a command as the cluster owner: user postgres when we are root, else ourselves.
as_pg() {
	if ((EUID == 0)); then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

read_state() {
	[[ -f "$STATE_FILE" ]] || return 1
	# shellcheck disable=SC1090
	source "$STATE_FILE"
	[[ -n "${PGDATA_DIR:-}" && -d "${PGDATA_DIR}" ]]
}

# running reports whether the recorded cluster is up and accepting connections (pg_ctl status alone
# is fooled by a killed postmaster that is still a zombie, or by a reused pid).
running() {
	read_state &&
		as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" status >/dev/null 2>&1 &&
		"$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "${PG_TEST_PORT_USED:-0}" -t 5
}

print_url() {
	printf "export DATABASE_URL='%s'\n" "$1"
}

cmd_status() {
	if running; then
		print_url "$DATABASE_URL"
		if bouncer_running; then
			print_bouncer_url
		fi
		return 0
	fi
	log "no cluster running (state file $STATE_FILE)"
	return 1
}

cmd_start() {
	[[ -x "$PG_BIN/postgres" ]] || die "PostgreSQL ${PG_MAJOR} is not installed; run: sudo $0 install"
	have_vector || die "the pgvector extension is not installed; run: sudo $0 install"
	if running; then
		log "cluster already running in $PGDATA_DIR"
		print_url "$DATABASE_URL"
		maybe_start_bouncer
		return 0
	fi
	if [[ -f "$STATE_FILE" ]]; then
		log "removing stale state $STATE_FILE"
		cmd_stop || true
	fi
	if ((EUID == 0)); then
		getent passwd postgres >/dev/null || die "user postgres does not exist; run: $0 install"
	fi

	local dir password
	dir=$(mktemp -d /tmp/echogate-pg.XXXXXX)
	password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	chmod 0700 "$dir"
	printf '%s\n' "$password" >"$dir/pwfile"
	if ((EUID == 0)); then
		chown -R postgres: "$dir"
	fi
	local data="$dir/data"
	log "initdb into $data"
	as_pg "$PG_BIN/initdb" -D "$data" -U postgres --pwfile="$dir/pwfile" \
		--auth-host=scram-sha-256 --auth-local=trust -E UTF8 --locale=C.UTF-8 --no-instructions >"$dir/initdb.log" 2>&1 ||
		{
			cat "$dir/initdb.log" >&2
			die "initdb failed"
		}
	rm -f "$dir/pwfile"
	cat >>"$data/postgresql.conf" <<-EOF

		# pg-test-cluster.sh: throwaway test cluster, durability off on purpose.
		listen_addresses = '127.0.0.1'
		unix_socket_directories = '$dir'
		fsync = off
		synchronous_commit = off
		full_page_writes = off
		max_connections = 200
		shared_preload_libraries = 'pg_stat_statements'
		pg_stat_statements.track = all
		shared_buffers = 128MB
		log_min_messages = warning
	EOF

	local port=${PG_TEST_PORT:-55432} tries=0 started=0
	while ((tries < 20)); do
		if port_in_use "$port"; then
			port=$((port + 1))
			tries=$((tries + 1))
			continue
		fi
		if as_pg "$PG_BIN/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 -o "-p $port" start >/dev/null 2>&1; then
			started=1
			break
		fi
		# Lost a race for the port (or another failure): show why, then try the next port.
		tail -n 5 "$dir/server.log" >&2 || true
		port=$((port + 1))
		tries=$((tries + 1))
	done
	((started == 1)) || die "could not start PostgreSQL (see $dir/server.log)"

	local url="postgres://postgres:${password}@127.0.0.1:${port}/${DB_NAME}?sslmode=disable"
	umask 077
	cat >"$STATE_FILE" <<-EOF
		PGDATA_DIR=$(printf '%q' "$data")
		PG_TEST_DIR=$(printf '%q' "$dir")
		PG_TEST_PORT_USED=$port
		DATABASE_URL=$(printf '%q' "$url")
	EOF
	as_pg "$PG_BIN/psql" -X -q -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
		-c "CREATE DATABASE ${DB_NAME}" >&2 || die "could not create database ${DB_NAME}"
	log "cluster up on 127.0.0.1:$port, data in $data, database $DB_NAME"
	print_url "$url"
	read_state || die "cannot read back $STATE_FILE"
	maybe_start_bouncer
}

# ---------------------------------------------------------------------------------------------
# PgBouncer in transaction mode in front of the cluster

PGBOUNCER_BIN=/usr/sbin/pgbouncer

bouncer_wanted() {
	[[ "${PG_TEST_PGBOUNCER:-1}" != 0 && -x "$PGBOUNCER_BIN" ]]
}

# bouncer_running reports whether the recorded pooler answers (state read by read_state).
bouncer_running() {
	[[ -n "${PGBOUNCER_PORT:-}" && -f "${PGBOUNCER_DIR:-/nonexistent}/pgbouncer.pid" ]] &&
		kill -0 "$(cat "$PGBOUNCER_DIR/pgbouncer.pid")" 2>/dev/null &&
		port_in_use "$PGBOUNCER_PORT"
}

print_bouncer_url() {
	printf "export ECHOGATE_TEST_PGBOUNCER_URL='%s'\n" "$PGBOUNCER_URL"
}

maybe_start_bouncer() {
	if ! bouncer_wanted; then
		[[ "${PG_TEST_PGBOUNCER:-1}" == 0 ]] || log "pgbouncer is not installed (run: sudo $0 install): no pooler started"
		return 0
	fi
	if bouncer_running; then
		log "pgbouncer already running on 127.0.0.1:$PGBOUNCER_PORT"
		print_bouncer_url
		return 0
	fi
	start_bouncer
}

start_bouncer() {
	local dir=${PG_TEST_DIR:-$(dirname "$PGDATA_DIR")}
	local re='^postgres://([^:]+):([^@]+)@'
	[[ "$DATABASE_URL" =~ $re ]] || die "cannot read user and password from the cluster URL in $STATE_FILE"
	local user=${BASH_REMATCH[1]} password=${BASH_REMATCH[2]}
	local bdir="$dir/pgbouncer"
	mkdir -p "$bdir"
	chmod 0700 "$bdir"
	printf '"%s" "%s"\n' "$user" "$password" >"$bdir/userlist.txt"
	local port=${PG_TEST_PGBOUNCER_PORT:-56432} tries=0
	while port_in_use "$port" && ((tries < 50)); do
		port=$((port + 1))
		tries=$((tries + 1))
	done
	# Pools are per database (tests through the pooler use databases of their own); the server
	# connections they hold in total stay below the cluster's max_connections (200), and idle ones
	# are closed soon so that a dropped test database does not keep them.
	cat >"$bdir/pgbouncer.ini" <<-EOF
		[databases]
		* = host=127.0.0.1 port=$PG_TEST_PORT_USED

		[pgbouncer]
		listen_addr = 127.0.0.1
		listen_port = $port
		unix_socket_dir =
		auth_type = scram-sha-256
		auth_file = $bdir/userlist.txt
		pool_mode = transaction
		max_client_conn = 4000
		default_pool_size = 20
		max_db_connections = 40
		max_user_connections = 120
		server_idle_timeout = 10
		server_lifetime = 300
		autodb_idle_timeout = 30
		ignore_startup_parameters = extra_float_digits
		logfile = $bdir/pgbouncer.log
		pidfile = $bdir/pgbouncer.pid
		log_connections = 0
		log_disconnections = 0
	EOF
	if ((EUID == 0)); then
		chown -R postgres: "$bdir"
	fi
	as_pg "$PGBOUNCER_BIN" -d -q "$bdir/pgbouncer.ini" >&2 || {
		tail -n 20 "$bdir/pgbouncer.log" >&2 || true
		die "could not start pgbouncer (see $bdir/pgbouncer.log)"
	}
	local waited=0
	until port_in_use "$port"; do
		((waited < 50)) || die "pgbouncer did not listen on 127.0.0.1:$port (see $bdir/pgbouncer.log)"
		sleep 0.1
		waited=$((waited + 1))
	done
	PGBOUNCER_DIR=$bdir
	PGBOUNCER_PORT=$port
	PGBOUNCER_URL="postgres://${user}:${password}@127.0.0.1:${port}/${DB_NAME}?sslmode=disable"
	umask 077
	{
		printf 'PGBOUNCER_DIR=%q\n' "$bdir"
		printf 'PGBOUNCER_PORT=%s\n' "$port"
		printf 'PGBOUNCER_URL=%q\n' "$PGBOUNCER_URL"
	} >>"$STATE_FILE"
	log "pgbouncer (transaction mode) up on 127.0.0.1:$port"
	print_bouncer_url
}

stop_bouncer() {
	local bdir=${PGBOUNCER_DIR:-$1/pgbouncer}
	[[ -f "$bdir/pgbouncer.pid" ]] || return 0
	local pid
	pid=$(cat "$bdir/pgbouncer.pid")
	if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && grep -q pgbouncer "/proc/$pid/comm" 2>/dev/null; then
		kill -INT "$pid" 2>/dev/null || true
		local waited=0
		while kill -0 "$pid" 2>/dev/null && ((waited < 50)); do
			sleep 0.1
			waited=$((waited + 1))
		done
		kill -KILL "$pid" 2>/dev/null || true
		log "pgbouncer stopped"
	fi
	rm -f "$bdir/pgbouncer.pid"
}

cmd_stop() {
	if ! read_state; then
		rm -f "$STATE_FILE"
		log "no cluster to stop"
		return 0
	fi
	if as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" status >/dev/null 2>&1; then
		as_pg "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1 ||
			log "pg_ctl stop failed (continuing with cleanup)"
	fi
	local dir=${PG_TEST_DIR:-$(dirname "$PGDATA_DIR")}
	stop_bouncer "$dir"
	case "$dir" in
	/tmp/echogate-pg.*) rm -rf "$dir" ;;
	*) log "not deleting unexpected directory $dir" ;;
	esac
	rm -f "$STATE_FILE"
	log "cluster stopped"
}

case "${1:-}" in
install) cmd_install ;;
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
*) usage ;;
esac
