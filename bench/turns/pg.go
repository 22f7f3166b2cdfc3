package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate/storage/postgres"
)

// pgURL is DATABASE_URL while the PostgreSQL scenarios run.
var pgURL string

// pgRig is a PostgreSQL store in a schema of its own, dropped by close.
type pgRig struct {
	st     *postgres.Store
	schema string
}

func newPGRig(ctx context.Context, lockConns int) (*pgRig, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "bench_" + hex.EncodeToString(b[:])
	st, err := postgres.New(postgres.Config{URL: pgURL, Schema: schema, MaxConns: 32, MaxLockConns: int32(lockConns)}, nil)
	if err != nil {
		return nil, err
	}
	if err := st.Open(ctx); err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return &pgRig{st: st, schema: schema}, nil
}

func (r *pgRig) close() {
	r.st.Close()
	ctx := context.Background()
	if c, err := pgx.Connect(ctx, pgURL); err == nil {
		_, _ = c.Exec(ctx, "DROP SCHEMA "+r.schema+" CASCADE")
		_ = c.Close(ctx)
	}
}
