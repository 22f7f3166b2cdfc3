package postgres

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
)

// The stops watch: on a direct connection, RecentStops is answered from memory instead of a
// query each time the pipeline polls (every 50 ms on every replica). One connection per store
// LISTENs on the stops channel of its schema; RequestStop notifies it in the transaction that
// stores the stop (NOTIFY is delivered at commit). After LISTEN the watch reads the recent stops
// once, so a stop committed while it was connecting is not missed. Until the watch is live (and
// whenever its connection is lost, and always through a transaction pooler, where LISTEN cannot
// work) RecentStops queries the table as before.

// stopsKeep is how long the watch keeps a stop: longer than any window the pipeline asks for.
const stopsKeep = time.Minute

// stopRetry is the wait before the watch reconnects after its connection failed.
const stopRetry = time.Second

type stopNote struct {
	ID      int64  `json:"id"`
	Session string `json:"session"`
	Actor   string `json:"actor"`
}

// stopEntry is a stop and when this process learnt of it (its age by the local clock: the
// database's age of the stop when it was read, plus the time since).
type stopEntry struct {
	sr echogate.StopRequest
	at time.Time
}

type stopWatch struct {
	s       *Store
	cfg     *pgx.ConnConfig // the watch's own connection, outside the pools
	channel string
	start   sync.Once
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex
	live    bool
	stops   []stopEntry   // oldest first
	changed chan struct{} // closed and replaced when live or stops change (tests wait on it)
}

func newStopWatch(s *Store) *stopWatch {
	return &stopWatch{s: s, cfg: s.poolCfg.ConnConfig.Copy(), channel: stopsChannel(s.schema), done: make(chan struct{}), changed: make(chan struct{})}
}

// stopsChannel is the NOTIFY channel of a schema's stops (notifications are per database).
func stopsChannel(schema string) string { return "echogate_stops:" + schema }

// recent returns the stops of the last window from memory, and false when the watch is not live
// (the caller queries instead). The first call starts the watch.
func (w *stopWatch) recent(window time.Duration) ([]echogate.StopRequest, bool) {
	w.start.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel = cancel
		go w.run(ctx)
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.live {
		return nil, false
	}
	since := time.Now().Add(-window)
	out := []echogate.StopRequest{}
	for _, e := range w.stops {
		if e.at.After(since) {
			out = append(out, e.sr)
		}
	}
	return out, true
}

// close ends the watch and waits for it.
func (w *stopWatch) close() {
	started := true
	w.start.Do(func() { started = false })
	if !started {
		return
	}
	w.cancel()
	<-w.done
}

func (w *stopWatch) run(ctx context.Context) {
	defer close(w.done)
	for {
		err := w.watch(ctx)
		w.setLive(false)
		if ctx.Err() != nil {
			return
		}
		w.s.log.Debug("postgres: stops watch lost its connection; polling until it is back", "err", err)
		t := time.NewTimer(stopRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// watch listens on one connection until it fails or ctx ends.
func (w *stopWatch) watch(ctx context.Context) error {
	c, err := pgx.ConnectConfig(ctx, w.cfg)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Close(cctx)
	}()
	if _, err := c.Exec(ctx, "LISTEN "+pgx.Identifier{w.channel}.Sanitize()); err != nil {
		return err
	}
	rows, err := c.Query(ctx, `SELECT id, session, actor, extract(epoch FROM now() - requested_at) FROM stops
WHERE requested_at > now() - make_interval(secs => $1) ORDER BY id`, stopsKeep.Seconds())
	if err != nil {
		return err
	}
	now := time.Now()
	var loaded []stopEntry
	for rows.Next() {
		var e stopEntry
		var key string
		var age float64
		if err := rows.Scan(&e.sr.ID, &key, &e.sr.Actor, &age); err != nil {
			rows.Close()
			return err
		}
		e.sr.Session = echogate.SessionKey(key)
		e.at = now.Add(-time.Duration(age * float64(time.Second)))
		loaded = append(loaded, e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	w.stops, w.live = loaded, true
	w.changedLocked()
	w.mu.Unlock()
	for {
		n, err := c.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var note stopNote
		if err := json.Unmarshal([]byte(n.Payload), &note); err != nil {
			w.s.log.Warn("postgres: stops watch: unreadable notification", "payload", n.Payload, "err", err)
			continue
		}
		w.add(stopEntry{sr: echogate.StopRequest{ID: note.ID, Session: echogate.SessionKey(note.Session), Actor: note.Actor}, at: time.Now()})
	}
}

func (w *stopWatch) add(e stopEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, have := range w.stops {
		if have.sr.ID == e.sr.ID {
			return
		}
	}
	cut := 0
	for cut < len(w.stops) && time.Since(w.stops[cut].at) > stopsKeep {
		cut++
	}
	w.stops = append(w.stops[cut:], e)
	w.changedLocked()
}

// changedLocked wakes whoever waits on changed. Called with w.mu held.
func (w *stopWatch) changedLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// wait returns a channel closed at the watch's next change.
func (w *stopWatch) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

func (w *stopWatch) setLive(live bool) {
	w.mu.Lock()
	w.live = live
	if !live {
		w.stops = nil
	}
	w.mu.Unlock()
}
