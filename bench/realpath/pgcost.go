package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The database-cost mode (-pg): the same gateway on SQLite and on PostgreSQL in one run, one
// after the other on the same machine, with what each turn costs the database.
//
//	eval "$(scripts/pg-test-cluster.sh start)"   # preloads pg_stat_statements
//	go run ./bench/realpath -pg "$DATABASE_URL" -turns 300 -sessions 16,200,1000
//
// For PostgreSQL: a database of the run's own; in the overhead scenarios the gateway reaches it
// through a TCP proxy that counts round trips (rtproxy.go), in the throughput scenarios directly
// (the proxy's CPU per round trip would be charged to PostgreSQL only); pg_stat_statements counts the statements of each overhead
// scenario (reset after its warm-up); database CPU is the cluster's processes' CPU from /proc
// (the postmaster, its live children and the children it reaped), so the cluster must be on this
// machine and used by nothing else meanwhile. -pg-pooler runs PostgreSQL a third time through
// that pooler URL (PgBouncer in transaction mode) with database.pooler: transaction.
var (
	pgFlag       = flag.String("pg", "", "database-cost mode: a superuser URL of a PostgreSQL on this machine with pg_stat_statements preloaded (scripts/pg-test-cluster.sh); runs SQLite and PostgreSQL in one run")
	pgPoolerFlag = flag.String("pg-pooler", "", "with -pg: also run PostgreSQL through this PgBouncer URL (transaction mode; database.pooler: transaction)")
	pgTopFlag    = flag.Int("pg-top", 12, "with -pg: statements listed per overhead scenario")
	pgParamsFlag = flag.String("pg-params", "", "with -pg: query parameters added to the gateway's DATABASE_URL, e.g. pool_max_conns=40")
	backendsFlag = flag.String("backends", "sqlite,postgres,pgbouncer", "with -pg: the backends to run (pgbouncer needs -pg-pooler)")
)

func backendWanted(name string) bool {
	return slices.Contains(strings.Split(*backendsFlag, ","), name)
}

// dbTarget is one backend of the database-cost run.
type dbTarget struct {
	name   string
	env    []string // DATABASE_URL (through the round-trip proxy), ECHOGATE_DATABASE_POOLER; empty for SQLite
	direct []string // the same without the proxy: the throughput windows' environment
	pg     *pgCluster
	proxy  *rtProxy
	dbName string
	stats  *pgx.Conn // on the run's database, where pg_stat_statements is created
}

// pgCluster is the cluster under test: an admin connection and its postmaster's pid.
type pgCluster struct {
	admin      *pgx.Conn
	postmaster int
}

func runDBCost(ctx context.Context, bin string, model *process, modelURL, tmp string) error {
	fmt.Printf("database cost: %d turns per overhead scenario (instant model), throughput at %s per model call, %s windows\n",
		*turnsFlag, *modelLatency, *duration)
	var targets []*dbTarget
	if backendWanted("sqlite") {
		targets = append(targets, &dbTarget{name: "sqlite"})
	}
	pg, err := openCluster(ctx, *pgFlag)
	if err != nil {
		return err
	}
	defer pg.admin.Close(ctx)
	for _, via := range []string{"postgres", "pgbouncer"} {
		if via == "pgbouncer" && *pgPoolerFlag == "" || !backendWanted(via) {
			continue
		}
		t, err := pg.target(ctx, via)
		if err != nil {
			return err
		}
		defer t.drop(ctx)
		targets = append(targets, t)
	}
	rates := map[string]map[int]float64{}
	for _, t := range targets {
		r, err := runTarget(ctx, t, bin, model, modelURL, tmp)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		rates[t.name] = r
	}
	if len(targets) < 2 || targets[0].name != "sqlite" {
		return nil
	}
	fmt.Printf("\nPostgreSQL against SQLite, turns/s of the same session count in this run:\n")
	for _, s := range splitInts(*sessionsFlag) {
		for _, t := range targets[1:] {
			fmt.Printf("  %5d sessions: %-9s %.0f%% of SQLite's rate\n", s, t.name, 100*rates[t.name][s]/max(rates["sqlite"][s], 1e-9))
		}
	}
	return nil
}

func openCluster(ctx context.Context, u string) (*pgCluster, error) {
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("-pg: %w", err)
	}
	var pid int
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return nil, err
	}
	pm, err := parentPID(pid)
	if err != nil {
		return nil, fmt.Errorf("-pg: the cluster must run on this machine (its CPU is read from /proc): %w", err)
	}
	return &pgCluster{admin: c, postmaster: pm}, nil
}

// target creates a database of the run's own and the gateway environment that reaches it: via
// "postgres" through the round-trip proxy, via "pgbouncer" through -pg-pooler.
func (c *pgCluster) target(ctx context.Context, via string) (*dbTarget, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "realpath_" + hex.EncodeToString(b[:])
	if _, err := c.admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, err
	}
	t := &dbTarget{name: via, pg: c, dbName: name}
	base := *pgFlag
	if via == "pgbouncer" {
		base = *pgPoolerFlag
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	if t.proxy, err = startRTProxy(u.Host); err != nil {
		return nil, err
	}
	u.Path = "/" + name
	if *pgParamsFlag != "" {
		u.RawQuery += "&" + *pgParamsFlag
	}
	t.direct = []string{"DATABASE_URL=" + u.String()}
	u.Host = t.proxy.addr()
	t.env = []string{"DATABASE_URL=" + u.String()}
	if via == "pgbouncer" {
		t.env = append(t.env, "ECHOGATE_DATABASE_POOLER=transaction")
		t.direct = append(t.direct, "ECHOGATE_DATABASE_POOLER=transaction")
	}
	// pg_stat_statements is read from the run's database.
	dbURL, _ := url.Parse(*pgFlag)
	dbURL.Path = "/" + name
	dc, err := pgx.Connect(ctx, dbURL.String())
	if err != nil {
		return nil, err
	}
	t.stats = dc
	if _, err := dc.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		return nil, fmt.Errorf("pg_stat_statements (add shared_preload_libraries = 'pg_stat_statements'; scripts/pg-test-cluster.sh does): %w", err)
	}
	return t, nil
}

func (t *dbTarget) drop(ctx context.Context) {
	if t.proxy != nil {
		t.proxy.close()
	}
	if t.stats != nil {
		t.stats.Close(ctx)
	}
	_, _ = t.pg.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+t.dbName+" WITH (FORCE)")
}

// dbOverheads runs the plain and one-tool turns one after the other in one session and reports
// per turn: latency, the gateway's CPU, the database's CPU, statements and round trips, then the
// statements that make up a turn.
func (b *bench) dbOverheads(t *dbTarget) error {
	c := newClient(4)
	fmt.Printf("%-16s %7s %10s %12s %12s %12s %12s\n", "scenario", "turns", "turn p50", "gw CPU/turn", "db CPU/turn", "stmts/turn", "trips/turn")
	for _, sc := range []struct{ name, prefix string }{{"plain turn", ""}, {"one-tool turn", toolPrefix}} {
		if !overheadWanted(sc.name) {
			continue
		}
		if _, err := b.sequential(c, sc.prefix, "warm-"+sc.name, 20); err != nil {
			return err
		}
		if err := t.resetStatements(b.ctx); err != nil {
			return err
		}
		cpu0, _ := cpuTime(b.gw.pid())
		db0, trips0 := t.dbCPU(), t.trips()
		lat, err := b.sequential(c, sc.prefix, "o-"+sc.name, *turnsFlag)
		if err != nil {
			return err
		}
		cpu1, _ := cpuTime(b.gw.pid())
		db1, trips1 := t.dbCPU(), t.trips()
		n := int64(len(lat))
		stmts, top, err := t.statements(b.ctx)
		if err != nil {
			return err
		}
		slices.Sort(lat)
		stmtCol := "-"
		if t.pg != nil {
			stmtCol = fmt.Sprintf("%.1f", float64(stmts)/float64(n))
		}
		fmt.Printf("%-16s %7d %10s %12s %12s %12s %12s\n", sc.name, n, ms(pct(lat, 50)), ms((cpu1-cpu0)/time.Duration(n)),
			t.perTurn(db1-db0, n), stmtCol, t.tripsPerTurn(trips1-trips0, n))
		for _, s := range top {
			fmt.Printf("    %6.2f/turn %9.3f ms/turn  %s\n", float64(s.calls)/float64(n), s.ms/float64(n), s.query)
		}
	}
	return nil
}

type stmtStat struct {
	query string
	calls int64
	ms    float64
}

func (t *dbTarget) resetStatements(ctx context.Context) error {
	if t.pg == nil {
		return nil
	}
	_, err := t.stats.Exec(ctx, "SELECT pg_stat_statements_reset()")
	return err
}

// statements returns the calls pg_stat_statements counted in the run's database since the
// reset, and the -pg-top statements by calls.
func (t *dbTarget) statements(ctx context.Context) (int64, []stmtStat, error) {
	if t.pg == nil {
		return 0, nil, nil
	}
	rows, err := t.stats.Query(ctx, `SELECT regexp_replace(query, '\s+', ' ', 'g'), calls, total_exec_time
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1 ORDER BY calls DESC, total_exec_time DESC`, t.dbName)
	if err != nil {
		return 0, nil, err
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (stmtStat, error) {
		var s stmtStat
		err := r.Scan(&s.query, &s.calls, &s.ms)
		if len(s.query) > 110 {
			s.query = s.query[:110] + "…"
		}
		return s, err
	})
	if err != nil {
		return 0, nil, err
	}
	var total int64
	for _, s := range all {
		total += s.calls
	}
	return total, all[:min(len(all), *pgTopFlag)], nil
}

// dbCPU is the cluster's CPU so far: the postmaster's own and its reaped children's, plus its
// live children's. Zero for SQLite (its CPU is the gateway's).
func (t *dbTarget) dbCPU() time.Duration {
	if t.pg == nil {
		return 0
	}
	total, _ := cpuTimeWithChildren(t.pg.postmaster)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, err := parentPID(pid); err == nil && pp == t.pg.postmaster {
			c, _ := cpuTime(pid)
			total += c
		}
	}
	return total
}

func (t *dbTarget) trips() int64 {
	if t.proxy == nil {
		return 0
	}
	return t.proxy.trips.Load()
}

func (t *dbTarget) perTurn(d time.Duration, n int64) string {
	if t.pg == nil {
		return "(in gw)"
	}
	return ms(d / time.Duration(max(n, 1)))
}

func (t *dbTarget) tripsPerTurn(trips, n int64) string {
	if t.proxy == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(trips)/float64(max(n, 1)))
}

// parentPID reads PPid from /proc/PID/status.
func parentPID(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no PPid", pid)
}

// cpuTimeWithChildren is pid's CPU plus that of its children it has waited for (utime, stime,
// cutime and cstime of /proc/PID/stat).
func cpuTimeWithChildren(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks int64
	for _, k := range []int{11, 12, 13, 14} {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += v
	}
	return time.Duration(ticks) * clockTick, nil
}
