package pipeline

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

const shardCount = 64

// Pipeline is the dispatcher plus the three stages. Make one with New, start it with Run, feed it
// with Submit (a channels.Sink).
type Pipeline struct {
	cfg       Config
	d         Deps
	log       *slog.Logger
	approvers map[string]bool
	policy    map[string]agent.Verdict
	hist      *historyCache
	snaps     *snapshotCache // frozen standing context per session (prompt.go)
	marks     *sessionMarks
	pending   pendingIndex
	caps      map[string]Caps // each platform's replier's capabilities, read once
	shared    sharedStore     // the store's capabilities for replicas, read once (replicas.go)
	// cpAtBegin: a DM turn asks its start writes to read the session's checkpoint in their round
	// trip (turnstart.Begin.ReadCheckpoint), where the ContextStage would read it alongside the
	// history (loadCheckpoint: replicas, and a Compactor whose checkpoint read the caller makes).
	cpAtBegin bool
	stages    Stages
	deferred  deferredReplays // retries of replays deferred on an unreadable turn log

	seed   maphash.Seed
	shards [shardCount]shard

	state      atomic.Int32 // 0 new, 1 running, 2 closing
	baseCtx    context.Context
	cancelBase context.CancelFunc
	workers    sync.WaitGroup
	// handoff gives a mailbox to a worker waiting for one; closing ends the waits (workers.go).
	handoff     chan mailboxJob
	closing     chan struct{}
	idleWorkers atomic.Int32
	// workersStarted counts the worker goroutines started.
	workersStarted atomic.Int64
	started        chan struct{} // closed when Run has started accepting events
	runAt          time.Time     // when Run began; events claimed since are this process's own

	overrides *modelOverrides // /model choices (commands.go)

	agents atomic.Pointer[agentSet] // the agent profiles (profile.go)
	gate   gate                     // the access rules (access.go)
	users  *userLimits              // per-user concurrency and rate (peruser.go)
	// questions are the tool calls' questions waiting for a person's answer (elicit.go).
	questions openQuestions
}

const (
	stateNew int32 = iota
	stateRunning
	stateClosing
)

type shard struct {
	mu    sync.Mutex
	boxes map[echogate.SessionKey]*mailbox
}

// mailbox is one session's queue. All fields are guarded by the shard's mutex.
type mailbox struct {
	key      echogate.SessionKey
	queue    []item
	reserved int  // slots held by Submits that are recording the event
	active   bool // a worker goroutine is draining the queue
	// locking: a Submit is claiming an event of this idle mailbox with the session's lock
	// (ClaimLocker); no worker starts until it queued its event first.
	locking bool
	cur     *turnCtl
}

type item struct {
	ev     echogate.InboundEvent
	replay bool
	// deferrals counts the replays of ev deferred so far (deferred.go).
	deferrals int
	// lock is the session's lock taken with the event's claim (ClaimLocker); nil: drain takes it.
	lock *claimedLock
}

// claimedLock is a session's lock taken with an event's claim, and the paused turn read with it.
type claimedLock struct {
	unlock func()
	pend   *echogate.PendingTurn
}

// turnCtl lets Submit stop the running turn of a session.
type turnCtl struct {
	event    string // the handled event's id (a tool call's question is shown under it, elicit.go)
	eventKey string // its dedupe key (checked with the session lock: pending.go)
	stopping atomic.Bool
	cancel   context.CancelFunc
	owner    atomic.Pointer[turnOwner] // whose turn runs, for authority (authority_running.go)
	// The handled event's completion and the wait for its session record's write, set by
	// handle before a turn or command answers it (handle.go); nil when none.
	done           *completion
	sessionWritten func()
	// locked is the session's paused turn as read with its lock (PendingLocker); nil when
	// it was not read so. route takes it once (lockedPending.take).
	locked *lockedPending
	// lockKey is the session whose cross-replica lock drain holds for this event ("" : none);
	// a turn of that session may give it back with its end (releaseWithEnd).
	lockKey echogate.SessionKey
}

func (c *turnCtl) stop() {
	c.stopping.Store(true)
	c.cancel()
}

// New validates the configuration and dependencies; it does no I/O.
func New(cfg Config, d Deps) (*Pipeline, error) {
	cfg = cfg.withDefaults()
	d.Repliers = redactRepliers(d.Repliers, d.Redactor) // no post carries a secret (redact.go)
	if d.Store == nil || d.Model == nil || d.Tools == nil {
		return nil, errors.New("pipeline: Store, Model and Tools are required")
	}
	switch cfg.OnBusy {
	case OnBusyQueue, OnBusyInterrupt:
	default:
		return nil, fmt.Errorf("pipeline: agent.on_busy %q: use queue or interrupt", cfg.OnBusy)
	}
	switch cfg.OnTimeout {
	case OnTimeoutDeny, OnTimeoutWait:
	default:
		return nil, fmt.Errorf("pipeline: approval.on_timeout %q: use deny or wait", cfg.OnTimeout)
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{cfg: cfg, d: d, log: d.Log, seed: maphash.MakeSeed(), started: make(chan struct{}),
		handoff: make(chan mailboxJob), closing: make(chan struct{}),
		approvers: map[string]bool{}, policy: map[string]agent.Verdict{}, hist: newHistoryCache(cfg.HistoryMessages), marks: newSessionMarks(),
		snaps: newSnapshotCache(snapshotCacheBytes), overrides: &modelOverrides{}}
	p.shared = sharedStoreOf(d.Store)
	p.cpAtBegin = p.shared.replicas() && compactorCapsOf(d.Compactor).loader != nil
	p.caps = make(map[string]Caps, len(d.Repliers))
	for platform, r := range d.Repliers {
		p.caps[platform] = CapsOf(r)
	}
	p.stages = p.buildStages()
	for _, a := range cfg.Approvers {
		p.approvers[a] = true
	}
	for name, v := range cfg.ToolPolicy {
		switch v {
		case "allow":
			p.policy[name] = agent.Allow
		case "ask":
			p.policy[name] = agent.Ask
		case "deny":
			p.policy[name] = agent.Deny
		default:
			return nil, fmt.Errorf("pipeline: tools.%s.approval %q: use allow, ask or deny", name, v)
		}
	}
	for i := range p.shards {
		p.shards[i].boxes = make(map[echogate.SessionKey]*mailbox)
	}
	if err := p.initAgentsAccess(); err != nil {
		return nil, err
	}
	if err := p.initUserLimits(); err != nil {
		return nil, err
	}
	return p, nil
}

// Run starts the pipeline: it replays events that were accepted but not finished before a
// restart, runs the approval-timeout janitor and the release of idle sessions' state (idle.go),
// and blocks until ctx ends. Then it stops accepting events, lets running turns finish for up
// to Config.DrainTimeout, cancels the rest, and returns after every goroutine it started has
// exited.
func (p *Pipeline) Run(ctx context.Context) error {
	if !p.state.CompareAndSwap(stateNew, stateRunning) {
		return errors.New("pipeline: Run called twice")
	}
	p.baseCtx, p.cancelBase = context.WithCancel(context.WithoutCancel(ctx))
	defer p.cancelBase()
	p.runAt = p.cfg.Now()

	if !p.shared.replicas() {
		if err := p.pending.load(ctx, p.d.Store); err != nil {
			p.log.Warn("pipeline: every event will read its session's paused turn", "err", err)
		}
		p.reconcile(ctx)
	}
	close(p.started)
	stopRenew := p.startRenewer() // the claims of held events, renewed until the drain ends (renew.go)
	if err := p.replay(ctx, true); err != nil {
		p.log.Error("pipeline: replay unfinished events", "err", err)
	}
	var jwg sync.WaitGroup
	jwg.Add(1)
	go func() {
		defer jwg.Done()
		p.janitor(ctx)
	}()
	if p.shared.stops != nil {
		jwg.Go(func() { p.watchStops(ctx) })
	}
	jwg.Go(func() { p.releaseIdle(ctx) })
	<-ctx.Done()
	p.deferred.close()
	jwg.Wait()
	p.shutdown()
	stopRenew()
	return nil
}

// shutdown stops intake and drains running turns within the bound.
func (p *Pipeline) shutdown() {
	p.state.Store(stateClosing)
	close(p.closing) // waiting workers exit; running ones finish their mailboxes
	// Barrier: a Submit that saw "running" under a shard lock has finished spawning its worker.
	for i := range p.shards {
		p.shards[i].mu.Lock()
		p.shards[i].mu.Unlock() //nolint:staticcheck // barrier
	}
	done := make(chan struct{})
	go func() { p.workers.Wait(); close(done) }()
	timer := time.NewTimer(p.cfg.DrainTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
		p.log.Warn("pipeline: drain timeout reached, cancelling running turns", "timeout", p.cfg.DrainTimeout)
		p.cancelBase()
		<-done
	}
}

// Started is closed once Run accepts events; callers that start Run in a goroutine wait on it
// before they Submit.
func (p *Pipeline) Started() <-chan struct{} { return p.started }

func (p *Pipeline) shardFor(k echogate.SessionKey) *shard {
	return &p.shards[maphash.String(p.seed, string(k))%shardCount]
}

// stopped records a stop that stopped this process's running turn, so a redelivery of it does
// not stop a later turn.
func (p *Pipeline) stopped(ctx context.Context, ev echogate.InboundEvent) {
	p.log.Info("turn stop requested", "session", ev.SessionKey(), "event_id", ev.ID, "channel", ev.Conversation.Platform)
	if _, err := p.d.Store.ClaimEvent(ctx, ev.DedupeKey(), nil, ev.ReceivedAt); err != nil {
		p.log.Warn("pipeline: record stop event", "event_id", ev.ID, "err", err)
		return
	}
	_ = p.d.Store.CompleteEvent(ctx, ev.DedupeKey(), p.cfg.Now())
}

// enqueueLocked appends to the mailbox and starts its worker if none runs. sh.mu must be held.
func (p *Pipeline) enqueueLocked(sh *shard, mb *mailbox, it item) {
	mb.queue = append(mb.queue, it)
	p.d.Metrics.Mailbox(1, 0)
	p.wakeLocked(sh, mb)
}

// wakeLocked starts mb's worker when events wait and none runs, unless a Submit is claiming
// an event with the session's lock (that event goes first). sh.mu must be held.
func (p *Pipeline) wakeLocked(sh *shard, mb *mailbox) {
	if !mb.active && !mb.locking && len(mb.queue) > 0 {
		mb.active = true
		p.startWorkerLocked(sh, mb)
	}
}

// reapLocked removes an idle mailbox. sh.mu must be held.
func (p *Pipeline) reapLocked(sh *shard, mb *mailbox) {
	if !mb.active && !mb.locking && len(mb.queue) == 0 && mb.reserved == 0 && sh.boxes[mb.key] == mb {
		delete(sh.boxes, mb.key)
		p.d.Metrics.Mailbox(0, -1)
	}
}

// drain handles mb's events, one turn at a time, until it is empty, and reaps it.
func (p *Pipeline) drain(sh *shard, mb *mailbox) {
	for {
		sh.mu.Lock()
		if len(mb.queue) == 0 {
			mb.active = false
			p.reapLocked(sh, mb)
			sh.mu.Unlock()
			return
		}
		it := mb.queue[0]
		mb.queue[0] = item{}
		mb.queue = mb.queue[1:]
		p.d.Metrics.Mailbox(-1, 0)
		ctx, cancel := context.WithTimeout(p.baseCtx, p.cfg.TurnTimeout)
		ctl := &turnCtl{cancel: cancel, event: it.ev.ID, eventKey: it.ev.DedupeKey()}
		mb.cur = ctl
		sh.mu.Unlock()

		if unlock, err := p.itemLock(ctx, ctl, mb.key, it); err != nil {
			// Left claimed and unfinished: the replay sweep takes it up later.
			p.log.Error("pipeline: session is locked elsewhere; event left for replay", "session", mb.key, "event_id", it.ev.ID, "err", err)
		} else {
			if p.shared.locker != nil {
				ctl.lockKey = mb.key
			}
			if ctl.locked != nil && ctl.locked.eventDone {
				// Taken over by another replica (agent.replay_after) while it waited here for the
				// session, and answered there: running it again would answer it twice.
				p.log.Info("event already answered by another replica; dropped", "session", mb.key, "event_id", it.ev.ID)
			} else {
				p.handle(ctx, ctl, &it)
			}
			unlock()
		}
		cancel()

		sh.mu.Lock()
		mb.cur = nil
		sh.mu.Unlock()
	}
}

// itemLock is the session's lock for it: the one taken with its claim (ClaimLocker), else
// lockSession's.
func (p *Pipeline) itemLock(ctx context.Context, ctl *turnCtl, key echogate.SessionKey, it item) (func(), error) {
	if it.lock == nil {
		return p.lockSession(ctx, ctl, key)
	}
	ctl.locked = &lockedPending{key: key, pend: it.lock.pend}
	return it.lock.unlock, nil
}

// lockSession takes the session's cross-replica lock when the store offers one, waiting with
// backoff while another replica runs the session (bounded by ctx, the turn timeout). A store
// that reads the paused turn with the lock (PendingLocker) leaves it on ctl for route.
func (p *Pipeline) lockSession(ctx context.Context, ctl *turnCtl, key echogate.SessionKey) (func(), error) {
	lk := p.shared.locker
	if lk == nil {
		return func() {}, nil
	}
	for tries := 1; ; tries++ {
		unlock, got, err := p.tryLockSession(ctx, ctl, key)
		if err != nil {
			return nil, err
		}
		if got {
			return unlock, nil
		}
		t := time.NewTimer(lockWait.Delay(tries))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
