package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/echogate/echogate"
)

// A lock lane is one pinned connection, the session locks held on it, and the goroutine that
// owns both. Everything that touches a lane's connection is a laneOp sent to that goroutine:
// it takes every op waiting when it is free (up to maxGroup) and sends them as one batch, one
// implicit transaction, in one round trip: group commit, as SQLite's single writer does. A turn's
// claim, lock, start and end each cost a round trip and a commit of their own otherwise; grouped,
// the commit, the round trip's wake-ups and the protocol's framing are shared by every session
// whose op waited, which is what most of a small statement's cost is (on the reference machine a
// one-row upsert costs 96 µs of server and 53 µs of client CPU on its own, 27 and 9 µs in a
// transaction of eight). Under light load every group has one op, and nothing waits for a group
// to fill.
//
// A group's ops share its fate: when the server refuses one statement, the transaction rolls
// back. Session locks are not transactional, so the group is laid out for that: every op's
// statements first, in arrival order, then the releases of the locks ops give back (a turn's end
// releasing its session, an unlock), so a refused group has released nothing. After a refusal
// the locks the group's ops took before it are given back and each op runs again alone, where it
// succeeds or fails on its own as before grouping.
//
// Sessions do not share rows across ops of one group (a session's ops are serialised by its lock
// and its lane), so grouping adds no conflicts between them; across replicas two groups may
// touch one event's row (two replicas claiming a redelivered event), and PostgreSQL's deadlock
// detection refuses one of them in the rare case they cross, after which its ops run alone.

// maxGroup bounds the ops one round trip carries, and reqQueue the ops waiting for a lane.
const (
	maxGroup = 64
	reqQueue = 256
)

// laneOp is one request on a lock lane. All its methods run on the lane's goroutine, one op at a
// time, so they may use the lane's state (conn, gen) without locking.
type laneOp interface {
	// start reports whether the op has statements to send; false when it is done already (its
	// lock went with an earlier connection, say), its outcome set.
	start(l *lockLane) bool
	// queue adds the op's statements to the group's batch, and read reads their results in the
	// same order; an error from read fails the group (a server error rolls it back).
	queue(b *pgx.Batch)
	read(br pgx.BatchResults) error
	// locks is the session whose lock the op's statements may take ("" : none), given back when
	// the group rolls back; releases is the session whose lock it gives back after every op's
	// statements ("" : none), and readRelease reads that release's outcome.
	locks() echogate.SessionKey
	releases() echogate.SessionKey
	readRelease(released bool)
	// done takes the op's outcome: err nil when its group committed, and gen the generation of
	// the connection it ran on. drop asks for the connection to be dropped after the group's
	// outcomes are handed out (its locks are in doubt).
	done(l *lockLane, gen uint64, err error) (drop bool)
}

// laneReq is an op waiting for its lane, and how its caller learns it is done.
type laneReq struct {
	ctx context.Context // an op whose ctx ended before it was sent is not sent
	op  laneOp
	out chan error
}

// errLaneClosed is returned for ops sent after the store closed.
var errLaneClosed = errors.New("the store is closed")

// startLane starts l's goroutine on pool; closeLane stops it. A pooled lane (through a
// transaction pooler, where the locks are lease rows) holds no connection between groups: it
// takes one from pool for each.
func (l *lockLane) startLane(pool *pgxpool.Pool, pooled bool) {
	l.pool, l.pooled = pool, pooled
	l.reqs = make(chan laneReq, reqQueue)
	l.stopped = make(chan struct{})
	go l.serve()
}

// do runs op on the lane and returns its outcome. It blocks until the op's group is done
// (bounded by lockTimeout once sent); a ctx that ends while the op waits to be sent returns its
// error without sending it. After close it returns errLaneClosed without running op.
func (l *lockLane) do(ctx context.Context, op laneOp) error {
	r := laneReq{ctx: ctx, op: op, out: make(chan error, 1)}
	l.smu.RLock()
	if l.closed {
		l.smu.RUnlock()
		return errLaneClosed
	}
	select {
	case l.reqs <- r:
	case <-ctx.Done():
		l.smu.RUnlock()
		return ctx.Err()
	}
	l.smu.RUnlock()
	return <-r.out
}

// closeLane stops taking ops, lets the goroutine finish those sent, and waits for it; it drops
// the connection, which releases the locks still held on it.
func (l *lockLane) closeLane() {
	l.smu.Lock()
	if !l.closed {
		l.closed = true
		close(l.reqs)
	}
	l.smu.Unlock()
	<-l.stopped
}

// serve is the lane's goroutine: it sends what waits, a group at a time, until the lane closes.
func (l *lockLane) serve() {
	defer close(l.stopped)
	defer l.drop()
	group := make([]laneReq, 0, maxGroup)
	for r := range l.reqs {
		group = append(group[:0], r)
	more:
		for len(group) < maxGroup {
			select {
			case r, ok := <-l.reqs:
				if !ok {
					break more
				}
				group = append(group, r)
			default:
				break more
			}
		}
		l.send(group)
		clear(group)
	}
}

// send runs one group: the ops whose caller still waits and that have something to send, in one
// batch. A group the server refused is undone and its ops run again one by one.
func (l *lockLane) send(group []laneReq) {
	live := group[:0:0]
	for _, r := range group {
		switch {
		case r.ctx.Err() != nil:
			r.out <- r.ctx.Err()
		case !r.op.start(l):
			r.out <- nil
		default:
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel()
	if err := l.ready(ctx); err != nil {
		l.hand(live, l.gen, err)
		return
	}
	if l.pooled {
		defer l.putBack()
	}
	gen := l.gen
	// Not cut by the callers' contexts once sent: a cancelled batch would leave the connection
	// (and every session's lock on it) in doubt.
	failed, err := l.roundTrip(ctx, live)
	if err == nil || len(live) == 1 || !isServerError(err) || failed >= len(live) {
		// Alone, an op handles its own refusal (done gives back what it took); a broken
		// connection, or a refusal among the releases, leaves the locks in doubt: dropped.
		if err != nil && (!isServerError(err) || failed >= len(live)) {
			l.drop()
		}
		l.hand(live, gen, err)
		return
	}
	// Rolled back: give back the locks the ops up to the refused one may have taken, then run
	// each op alone.
	if err := l.giveBack(ctx, live[:failed+1]); err != nil {
		l.drop()
		l.hand(live, gen, err)
		return
	}
	for _, r := range live {
		l.send([]laneReq{r})
	}
}

// roundTrip sends the ops of live as one batch and reads it back. With err, failed is the index
// of the op whose statements failed (len(live): a release, or the batch's end).
func (l *lockLane) roundTrip(ctx context.Context, live []laneReq) (failed int, err error) {
	b := &pgx.Batch{}
	for _, r := range live {
		r.op.queue(b)
	}
	for _, r := range live {
		if key := r.op.releases(); key != "" {
			b.Queue(sessionUnlockSQL, string(key))
		}
	}
	br := l.conn.SendBatch(ctx, b)
	failed = len(live)
	for i, r := range live {
		if err = r.op.read(br); err != nil {
			failed = i
			break
		}
	}
	if err == nil {
		for _, r := range live {
			if r.op.releases() == "" {
				continue
			}
			var released bool
			if err = br.QueryRow().Scan(&released); err != nil {
				err = fmt.Errorf("release the session's lock: %w", err)
				break
			}
			r.op.readRelease(released)
		}
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return failed, err
}

// giveBack releases, in one round trip, the locks the ops of a rolled-back group may have taken
// (an unlock of a lock not held answers false and changes nothing).
func (l *lockLane) giveBack(ctx context.Context, ops []laneReq) error {
	b := &pgx.Batch{}
	for _, r := range ops {
		if key := r.op.locks(); key != "" {
			b.Queue(sessionUnlockSQL, string(key))
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return l.conn.SendBatch(ctx, b).Close()
}

// hand gives each op of live its outcome, then drops the connection if one asked.
func (l *lockLane) hand(live []laneReq, gen uint64, err error) {
	drop := false
	for _, r := range live {
		if r.op.done(l, gen, err) {
			drop = true
		}
		r.out <- err
	}
	if drop {
		l.drop()
	}
}

// ready gives the lane its connection, acquired from the pool if it has none.
func (l *lockLane) ready(ctx context.Context) error {
	if l.conn == nil {
		c, err := l.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		l.conn = c
	}
	return nil
}

// putBack gives a pooled lane's connection back to the pool after its group.
func (l *lockLane) putBack() {
	if l.conn != nil {
		l.conn.Release()
		l.conn = nil
	}
}

// drop closes the lane's connection (releasing its locks server-side) and returns it to the
// pool; the locks of older generations are gone.
func (l *lockLane) drop() {
	if l.conn == nil {
		return
	}
	closeConn(l.conn)
	l.conn.Release()
	l.conn = nil
	l.gen++
}

// release gives back key's lock on the lane's connection, on the lane's goroutine (an op's
// done): released is false when the connection did not hold it.
func (l *lockLane) release(key echogate.SessionKey) (released bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
	defer cancel()
	err = l.conn.QueryRow(ctx, sessionUnlockSQL, string(key)).Scan(&released)
	return released, err
}

// lockLane is one pinned connection, the locks on it, and the goroutine that owns both (serve).
type lockLane struct {
	pool    *pgxpool.Pool
	pooled  bool
	reqs    chan laneReq
	stopped chan struct{}
	smu     sync.RWMutex // closed, and sends on reqs (so none follows close)
	closed  bool

	// The goroutine's own:
	conn *pgxpool.Conn // nil until first used, and after it broke
	gen  uint64        // bumped whenever conn is dropped: locks of an older gen are gone
}

// batchOp is an op of statements alone: no lock taken or given back outside its transaction.
type batchOp struct {
	q func(b *pgx.Batch)
	r func(br pgx.BatchResults) error
}

func (o *batchOp) queue(b *pgx.Batch)                 { o.q(b) }
func (o *batchOp) read(br pgx.BatchResults) error     { return o.r(br) }
func (o *batchOp) start(*lockLane) bool               { return true }
func (o *batchOp) locks() echogate.SessionKey         { return "" }
func (o *batchOp) releases() echogate.SessionKey      { return "" }
func (o *batchOp) readRelease(bool)                   {}
func (o *batchOp) done(*lockLane, uint64, error) bool { return false }

// lanes are a store's lock lanes, a session always on the same one.
type lanes struct {
	seed  maphash.Seed
	lanes []lockLane
}

func newLanes(pool *pgxpool.Pool, n int, pooled bool) lanes {
	ls := lanes{seed: maphash.MakeSeed(), lanes: make([]lockLane, max(n, 1))}
	for i := range ls.lanes {
		ls.lanes[i].startLane(pool, pooled)
	}
	return ls
}

func (ls *lanes) lane(key echogate.SessionKey) *lockLane {
	return &ls.lanes[maphash.String(ls.seed, string(key))%uint64(len(ls.lanes))]
}

// close stops the lanes, which gives their connections back closed: that drops any lock still
// held on them.
func (ls *lanes) close() {
	for i := range ls.lanes {
		ls.lanes[i].closeLane()
	}
}
