package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/echogate/echogate"
)

// MigrateTo applies the first n embedded migrations only (tests of one migration over a
// database populated at the version before it).
func (s *Store) MigrateTo(ctx context.Context, n int) error {
	ms, err := builtinMigrations()
	if err != nil {
		return err
	}
	return s.migrate(ctx, ms[:n])
}

// RenewLeases renews the session leases the store holds now (what its background loop does every
// LeaseTTL/3). Only for a store with Pooler "transaction".
func (s *Store) RenewLeases() error {
	p, err := s.conns(context.Background())
	if err != nil {
		return err
	}
	return p.leases.renew()
}

// SendAtomic exposes sendAtomic on the query pool, results discarded.
func (s *Store) SendAtomic(ctx context.Context, b *pgx.Batch) error {
	p, err := s.pool(ctx, "send atomic")
	if err != nil {
		return err
	}
	return sendAtomic(ctx, p, b, func(br pgx.BatchResults) error {
		for range b.Len() {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
	})
}

// StopsChanged returns a channel closed at the stops watch's next change (live, or a stop
// learnt), and whether the watch is live now.
func (s *Store) StopsChanged() (<-chan struct{}, bool) {
	p, err := s.conns(context.Background())
	if err != nil || p.stops == nil {
		return nil, false
	}
	ch := p.stops.wait()
	p.stops.mu.Lock()
	defer p.stops.mu.Unlock()
	return ch, p.stops.live
}

// HoldLane keeps the store's first lock lane busy (its goroutine inside an op of its own) until
// release(n) is called, which first waits until n ops wait behind it: they then go as one
// group, in the order they were sent. queued is how many wait now.
func (s *Store) HoldLane() (queued func() int, release func(n int)) {
	p, err := s.conns(context.Background())
	if err != nil {
		panic("HoldLane: the store is not open")
	}
	var l *lockLane
	if p.leases != nil {
		l = &p.leases.lanes.lanes[0]
	} else {
		l = &p.mux.lanes.lanes[0]
	}
	h := &holdOp{entered: make(chan struct{}), unblock: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.do(context.Background(), h)
	}()
	<-h.entered
	queued = func() int { return len(l.reqs) }
	release = func(n int) {
		for deadline := time.Now().Add(10 * time.Second); queued() < n && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		close(h.unblock)
		<-done
	}
	return queued, release
}

// holdOp blocks its lane's goroutine in start until unblocked, and sends nothing.
type holdOp struct{ entered, unblock chan struct{} }

func (o *holdOp) start(*lockLane) bool {
	close(o.entered)
	<-o.unblock
	return false
}
func (o *holdOp) queue(*pgx.Batch)                   {}
func (o *holdOp) read(pgx.BatchResults) error        { return nil }
func (o *holdOp) locks() echogate.SessionKey         { return "" }
func (o *holdOp) releases() echogate.SessionKey      { return "" }
func (o *holdOp) readRelease(bool)                   {}
func (o *holdOp) done(*lockLane, uint64, error) bool { return false }
