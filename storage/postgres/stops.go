package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
)

const (
	qRequestStop = `INSERT INTO stops (session, actor) VALUES ($1, $2)`
	qPruneStops  = `DELETE FROM stops WHERE requested_at < now() - interval '5 minutes'`
	qRecentStops = `SELECT id, session, actor FROM stops WHERE requested_at > now() - make_interval(secs => $1) ORDER BY id`
)

// RequestStop stores a stop of the session's running turn sent by actor (a qualified id),
// wherever the turn runs (see pipeline.StopFlags), and removes stops older than five minutes.
func (s *Store) RequestStop(ctx context.Context, key echogate.SessionKey, actor string) error {
	if key == "" {
		return fmt.Errorf("postgres: request stop: %w: empty session key", ErrInvalid)
	}
	p, err := s.pool(ctx, fmt.Sprintf("request stop of %q", key))
	if err != nil {
		return err
	}
	err = inTx(ctx, p, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qRequestStop, string(key), actor); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, qPruneStops)
		return err
	})
	if err != nil {
		return fail(ctx, err, "request stop of %q", key)
	}
	return nil
}

// RecentStops lists the stops requested within the last `window` by the database's clock,
// oldest first, each with its id (see pipeline.StopFlags).
func (s *Store) RecentStops(ctx context.Context, window time.Duration) ([]echogate.StopRequest, error) {
	p, err := s.pool(ctx, "recent stops")
	if err != nil {
		return nil, err
	}
	rows, err := p.Query(ctx, qRecentStops, window.Seconds())
	if err != nil {
		return nil, fail(ctx, err, "recent stops")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (echogate.StopRequest, error) {
		var sr echogate.StopRequest
		var key string
		err := r.Scan(&sr.ID, &key, &sr.Actor)
		sr.Session = echogate.SessionKey(key)
		return sr, err
	})
	if err != nil {
		return nil, fail(ctx, err, "recent stops")
	}
	return out, nil
}
