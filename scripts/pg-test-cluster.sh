#!/usr/bin/env bash
# pg-test-cluster.sh — PostgreSQL 15 + pgvector for echogate's tests: installer and throwaway cluster.
#
# Usage:
#   scripts/pg-test-cluster.sh install   # idempotent: apt-get postgresql-15 (+ build pgvector if missing)
#   scripts/pg-test-cluster.sh start     # start a throwaway cluster; prints `export DATABASE_URL=…` on stdout
#   scripts/pg-test-cluster.sh stop      # stop it and delete its data directory
#   scripts/pg-test-cluster.sh status    # print the URL of the running cluster, exit 1 if none
#
# Developers:
#   sudo scripts/pg-test-cluster.sh install
#   eval "$(scripts/pg-test-cluster.sh start)"
#   go test -race ./storage/postgres/
#   scripts/pg-test-cluster.sh stop
#
# The cluster is for tests only: it listens on 127.0.0.1 on a free port, runs with fsync,
# synchronous_commit and full_page_writes off (a crash loses it, which is fine: it is thrown away),
# and authenticates with a random password (scram-sha-256) printed in the URL.
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
	local need=(postgresql-${PG_MAJOR} postgresql-client-${PG_MAJOR})
	if ((EUID != 0)); then
		local p
		for p in "${need[@]}"; do
			pkg_installed "$p" || die "package $p is missing; run: sudo $0 install"
		done
		have_vector || die "the pgvector extension is missing; run: sudo $0 install"
		log "postgresql-${PG_MAJOR} and pgvector already installed"
		return 0
	fi
	apt_install "${need[@]}"
	if have_vector; then
		log "postgresql-${PG_MAJOR} and pgvector ready ($(grep -h default_version "${PG_SHARE}/extension/vector.control" | tr -d "' "))"
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
	log "postgresql-${PG_MAJOR} and pgvector ready"
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
