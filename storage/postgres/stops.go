package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
)

const (
	// The stop and its notification (delivered at commit) to the replicas' stops watches.
	qRequestStop = `WITH ins AS (INSERT INTO stops (session, actor) VALUES ($1, $2) RETURNING id, session, actor)
SELECT pg_notify($3, json_build_object('id', id, 'session', session, 'actor', actor)::text) FROM ins`
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
		if _, err := tx.Exec(ctx, qRequestStop, string(key), actor, stopsChannel(s.schema)); err != nil {
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
// oldest first, each with its id (see pipeline.StopFlags). On a direct connection it answers from
// the stops watch (stopwatch.go: LISTEN, no query) once that is live, and queries until then;
// through a transaction pooler it always queries.
func (s *Store) RecentStops(ctx context.Context, window time.Duration) ([]echogate.StopRequest, error) {
	ps, err := s.conns(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: recent stops: %w", err)
	}
	if ps.stops != nil {
		if out, ok := ps.stops.recent(window); ok {
			return out, nil
		}
	}
	rows, err := ps.q.Query(ctx, qRecentStops, window.Seconds())
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
