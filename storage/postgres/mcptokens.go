package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/echogate/echogate/internal/mcptoken"
)

// OAuth grants of MCP servers (mcptoken.Store): sealed blobs, one per (server, user).

const qPutMCPToken = `INSERT INTO mcp_tokens (server, user_id, sealed, expires_at, updated_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (server, user_id) DO UPDATE SET sealed = excluded.sealed, expires_at = excluded.expires_at,
updated_at = excluded.updated_at`

// GetMCPToken returns the grant of (server, user); a missing one wraps ErrNotFound.
func (s *Store) GetMCPToken(ctx context.Context, server, user string) (mcptoken.Record, error) {
	if server == "" {
		return mcptoken.Record{}, fmt.Errorf("postgres: get mcp token: %w: empty server", ErrInvalid)
	}
	recs, err := s.queryMCPTokens(ctx, "get mcp token", `SELECT server, user_id, sealed, expires_at, updated_at
FROM mcp_tokens WHERE server = $1 AND user_id = $2`, server, user)
	if err != nil {
		return mcptoken.Record{}, err
	}
	if len(recs) == 0 {
		return mcptoken.Record{}, fmt.Errorf("postgres: get mcp token %q: %w", server, ErrNotFound)
	}
	return recs[0], nil
}

// PutMCPToken stores r, replacing the grant of the same (server, user).
func (s *Store) PutMCPToken(ctx context.Context, r mcptoken.Record) error {
	if r.Server == "" || len(r.Sealed) == 0 {
		return fmt.Errorf("postgres: put mcp token: %w: a grant needs a server and a sealed blob", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("put mcp token %q", r.Server))
	if err != nil {
		return err
	}
	if _, err := p.Exec(ctx, qPutMCPToken, r.Server, r.User, r.Sealed, optTime(utc(r.ExpiresAt)), utc(s.now())); err != nil {
		return fail(ctx, err, "put mcp token %q", r.Server)
	}
	return nil
}

// DeleteMCPToken removes the grant of (server, user); a missing one wraps ErrNotFound.
func (s *Store) DeleteMCPToken(ctx context.Context, server, user string) error {
	if server == "" {
		return fmt.Errorf("postgres: delete mcp token: %w: empty server", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("delete mcp token %q", server))
	if err != nil {
		return err
	}
	tag, err := p.Exec(ctx, `DELETE FROM mcp_tokens WHERE server = $1 AND user_id = $2`, server, user)
	if err != nil {
		return fail(ctx, err, "delete mcp token %q", server)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: delete mcp token %q: %w", server, ErrNotFound)
	}
	return nil
}

// ListMCPTokens lists user's grants ("" : the servers' own) by server, without blobs.
func (s *Store) ListMCPTokens(ctx context.Context, user string) ([]mcptoken.Record, error) {
	return s.queryMCPTokens(ctx, "list mcp tokens", `SELECT server, user_id, ''::bytea, expires_at, updated_at
FROM mcp_tokens WHERE user_id = $1 ORDER BY server`, user)
}

func (s *Store) queryMCPTokens(ctx context.Context, op, q string, args ...any) ([]mcptoken.Record, error) {
	p, err := s.pool(ctx, op)
	if err != nil {
		return nil, err
	}
	rows, err := p.Query(ctx, q, args...)
	if err != nil {
		return nil, fail(ctx, err, "%s", op)
	}
	defer rows.Close()
	var out []mcptoken.Record
	for rows.Next() {
		var r mcptoken.Record
		var exp *time.Time
		var updated time.Time
		if err := rows.Scan(&r.Server, &r.User, &r.Sealed, &exp, &updated); err != nil {
			return nil, fail(ctx, err, "%s", op)
		}
		if len(r.Sealed) == 0 {
			r.Sealed = nil
		}
		if exp != nil {
			r.ExpiresAt = exp.UTC()
		}
		r.UpdatedAt = updated.UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, err, "%s", op)
	}
	return out, nil
}
