package postgres

import (
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config configures the store. Only URL is required; the zero value of every other field means
// the default documented on it.
type Config struct {
	// URL is the connection string: postgres://user:password@host:5432/db?sslmode=require, or
	// the key=value form ("host=… dbname=…"). pgx's parameters are honoured (sslmode,
	// connect_timeout, pool_max_conns, default_query_exec_mode, …). Required.
	URL string
	// MaxConns caps the query pool. Default: pool_max_conns from the URL if set, else 10.
	MaxConns int32
	// MaxLockConns is the number of connections TryLockSession's locks are multiplexed over
	// (each holds the locks of many sessions), pinned from a pool of their own so held locks
	// never starve queries. It does not bound the locks held at once. Each is a lane whose
	// waiting work goes in one round trip (lane.go): fewer lanes make bigger groups. Default 8
	// (on 2 cores at 1000 sessions: 8 lanes 1327–1489 turns/s, 16 lanes 1131–1301).
	MaxLockConns int32
	// EfSearch is pgvector's hnsw.ef_search for nearest-neighbour queries (default 100).
	EfSearch int
	// Schema, when set, holds the store's tables: Migrate creates it, and every connection runs
	// with search_path = <schema>, public. A lower-case SQL identifier ([a-z_][a-z0-9_]*, at most
	// 63 bytes). Default: the server's search_path.
	Schema string
	// ConnectTimeout bounds establishing one connection when the URL has no connect_timeout.
	// Default 10s.
	ConnectTimeout time.Duration
	// MaxConnLifetime recycles connections after this age (e.g. to follow a DNS fail-over).
	// Default 1h.
	MaxConnLifetime time.Duration
	// MaxConnIdleTime closes connections idle this long. Default 30m.
	MaxConnIdleTime time.Duration
	// Pooler says what sits between the store and PostgreSQL: "" or "none" (a direct connection,
	// or a pooler in session mode) or "transaction" (a pooler in transaction mode, such as
	// PgBouncer with pool_mode = transaction); see the package doc. Default "none".
	Pooler string
	// LeaseTTL is how long a session lease taken through a transaction pooler lives without being
	// renewed; the store renews its leases every LeaseTTL/3, and another replica takes over a
	// lease whose owner stopped renewing it once it has expired (so a killed replica's sessions wait
	// up to LeaseTTL for another). Default 10s.
	LeaseTTL time.Duration
	// Tracer, when set, traces the query and lock pools' statements (pgx.QueryTracer, and
	// pgx.BatchTracer when it implements it): diagnostics, and tests that count round trips.
	Tracer pgx.QueryTracer
	// Now is the clock used for timestamps the caller left zero. Default time.Now.
	Now func() time.Time
}

// New validates cfg and returns a store that is not open yet. It does no network I/O (pgx may
// read a ~/.pgpass or service file named by the URL). log may be nil (logging is then discarded).
// Errors wrap ErrInvalid and never contain the password.
func New(cfg Config, log *slog.Logger) (*Store, error) {
	url := strings.TrimSpace(cfg.URL)
	if url == "" {
		return nil, fmt.Errorf("postgres: config url is empty: %w: set database.url or DATABASE_URL to postgres://user:password@host:5432/dbname", ErrInvalid)
	}
	if strings.Contains(url, "://") && !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		scheme, _, _ := strings.Cut(url, "://")
		return nil, fmt.Errorf("postgres: config url has scheme %q: %w: use postgres://user:password@host:5432/dbname", scheme, ErrInvalid)
	}
	poolCfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgconn's parse errors redact the password; keep only the reason.
		return nil, fmt.Errorf("postgres: config url: %w: %s (want postgres://user:password@host:5432/dbname?sslmode=…)", ErrInvalid, parseReason(err))
	}
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	s := &Store{schema: cfg.Schema, now: cfg.Now, log: log, efSearch: orDefault(cfg.EfSearch, DefaultEfSearch)}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	cc := poolCfg.ConnConfig
	s.target = fmt.Sprintf("%s:%d/%s", cc.Host, cc.Port, cc.Database)
	if cfg.Pooler == PoolerTransaction {
		s.pooled, s.leaseTTL, s.owner = true, orDefault(cfg.LeaseTTL, DefaultLeaseTTL), leaseOwner()
		if _, ok := cc.RuntimeParams["search_path"]; ok {
			return nil, fmt.Errorf("postgres: config url sets search_path with database.pooler transaction: %w: a transaction pooler does not carry it to its server connections; use a database of its own (or ALTER ROLE … SET search_path)", ErrInvalid)
		}
		// Unnamed statements only: a named one lives on a server connection the pooler gives
		// to other clients. The describe cache keeps one round trip per query after the first.
		if !strings.Contains(url, "default_query_exec_mode") {
			cc.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
		}
	}

	if err := s.configurePools(cfg, url, poolCfg); err != nil {
		return nil, err
	}
	return s, nil
}

// checkConfig refuses settings out of their ranges, naming the setting and the fix.
func checkConfig(cfg Config) error {
	switch {
	case cfg.MaxConns < 0 || cfg.MaxConns > maxPoolConns:
		return fmt.Errorf("postgres: config max conns %d: %w: must be between 0 (default) and %d", cfg.MaxConns, ErrInvalid, maxPoolConns)
	case cfg.MaxLockConns < 0 || cfg.MaxLockConns > maxPoolConns:
		return fmt.Errorf("postgres: config max lock conns %d: %w: must be between 0 (default %d) and %d", cfg.MaxLockConns, ErrInvalid, DefaultMaxLockConns, maxPoolConns)
	case cfg.Schema != "" && !schemaRE.MatchString(cfg.Schema):
		return fmt.Errorf("postgres: config schema %q: %w: use a lower-case identifier of letters, digits and _ (at most 63 bytes, not starting with a digit)", cfg.Schema, ErrInvalid)
	case strings.HasPrefix(cfg.Schema, "pg_"):
		return fmt.Errorf("postgres: config schema %q: %w: names starting with pg_ are reserved by PostgreSQL", cfg.Schema, ErrInvalid)
	case cfg.ConnectTimeout < 0:
		return fmt.Errorf("postgres: config connect timeout %s: %w: must be >= 0 (0 means the default %s)", cfg.ConnectTimeout, ErrInvalid, DefaultConnectTimeout)
	case cfg.MaxConnLifetime < 0:
		return fmt.Errorf("postgres: config max conn lifetime %s: %w: must be >= 0 (0 means the default %s)", cfg.MaxConnLifetime, ErrInvalid, DefaultMaxConnLifetime)
	case cfg.MaxConnIdleTime < 0:
		return fmt.Errorf("postgres: config max conn idle time %s: %w: must be >= 0 (0 means the default %s)", cfg.MaxConnIdleTime, ErrInvalid, DefaultMaxConnIdleTime)
	case cfg.Pooler != "" && cfg.Pooler != PoolerNone && cfg.Pooler != PoolerTransaction:
		return fmt.Errorf("postgres: config database.pooler %q: %w: use none (direct, or a pooler in session mode) or transaction (PgBouncer pool_mode = transaction); statement mode cannot run transactions", cfg.Pooler, ErrInvalid)
	case cfg.Pooler == PoolerTransaction && cfg.Schema != "":
		return fmt.Errorf("postgres: config schema %q with database.pooler transaction: %w: a transaction pooler does not carry search_path to its server connections; give echogate a database of its own (or ALTER ROLE … SET search_path) instead of a schema", cfg.Schema, ErrInvalid)
	case cfg.LeaseTTL < 0:
		return fmt.Errorf("postgres: config lease ttl %s: %w: must be >= 0 (0 means the default %s)", cfg.LeaseTTL, ErrInvalid, DefaultLeaseTTL)
	}

	if cfg.EfSearch < 0 || cfg.EfSearch > 1000 {
		return fmt.Errorf("postgres: ef_search %d: use 1 to 1000 (0 means %d)", cfg.EfSearch, DefaultEfSearch)
	}
	return nil
}

// configurePools sets the query pool's and the lock connections' limits, timeouts and session
// parameters on poolCfg (parsed from url) and keeps both in s.
func (s *Store) configurePools(cfg Config, url string, poolCfg *pgxpool.Config) error {
	cc := poolCfg.ConnConfig
	if cfg.MaxConns > 0 {
		poolCfg.MaxConns = cfg.MaxConns
	} else if !strings.Contains(url, "pool_max_conns") {
		poolCfg.MaxConns = DefaultMaxConns
	}
	if s.pooled && poolCfg.MaxConns < 2 {
		return fmt.Errorf("postgres: config max conns %d with database.pooler transaction: %w: Migrate holds its lock on one connection while it works on another; use 2 or more", poolCfg.MaxConns, ErrInvalid)
	}
	if poolCfg.MinConns > poolCfg.MaxConns {
		poolCfg.MinConns = poolCfg.MaxConns
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = DefaultConnectTimeout
		if cfg.ConnectTimeout > 0 {
			cc.ConnectTimeout = cfg.ConnectTimeout
		}
	}
	poolCfg.MaxConnLifetime = orDefault(cfg.MaxConnLifetime, DefaultMaxConnLifetime)
	poolCfg.MaxConnIdleTime = orDefault(cfg.MaxConnIdleTime, DefaultMaxConnIdleTime)
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = "echogate"
	}
	if s.schema != "" {
		cc.RuntimeParams["search_path"] = pgx.Identifier{s.schema}.Sanitize() + ", public"
	}
	// Every server-side timestamp conversion is done in UTC.
	cc.RuntimeParams["timezone"] = "UTC"

	if cfg.Tracer != nil {
		cc.Tracer = cfg.Tracer // the lock connections' too: a turn's round trips are counted whole
	}
	lockCfg := poolCfg.Copy()
	lockCfg.MaxConns = orDefault(cfg.MaxLockConns, DefaultMaxLockConns)
	lockCfg.MinConns = 0
	lockCfg.MinIdleConns = 0
	// A pinned lock connection outlives any lifetime limit: pgxpool recycles only released ones.
	poolCfg.AfterConnect = s.registerVector
	s.poolCfg, s.lockCfg = poolCfg, lockCfg
	return nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// pgx redacts only on a best-effort basis, and which url.Parse errors repeat verbatim).
func parseReason(err error) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return "cannot parse the connection string"
	}
	text := pe.Error()
	inner := pe.Unwrap()
	if inner != nil {
		text = strings.TrimSuffix(text, " ("+inner.Error()+")")
	}
	reason := "cannot parse the connection string"
	if i := strings.LastIndex(text, "`: "); i >= 0 {
		reason = text[i+3:]
	}
	if inner != nil {
		var ue *neturl.Error
		if errors.As(inner, &ue) {
			inner = ue.Err
		}
		reason += ": " + inner.Error()
	}
	return reason
}
