package pipeline

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/agent/cost"
)

// BudgetReserver is a Budget that holds a model call's estimate against the budgets from its
// check until release (agent/cost's Tracker): the pipeline releases it once the call's usage
// is in the ledger, so parallel turns of one user see each other's calls in flight. A Budget
// without it is only checked.
type BudgetReserver interface {
	Reserve(ctx context.Context, s cost.Scope, req agent.Request) (release func(), err error)
}

// reserveBudget checks b (a zero budgetCaps: none) for the call req and, when b reserves,
// keeps the hold with the turn's spend until releaseBudget.
func (t *Turn) reserveBudget(ctx context.Context, b budgetCaps, s cost.Scope, req agent.Request) error {
	if b.budget == nil {
		return nil
	}
	if b.reserver == nil {
		return b.budget.Check(ctx, s, req)
	}
	release, err := b.reserver.Reserve(ctx, s, req)
	if err != nil {
		return err
	}
	l := &t.usage
	l.mu.Lock()
	l.holds = append(l.holds, release)
	l.mu.Unlock()
	return nil
}

// releaseBudget releases the turn's budget holds. Call it when the usage of every call made so
// far is in the ledger (or could not be written, which is logged): before the next call's
// check, and when the turn ended.
func (t *Turn) releaseBudget() {
	l := &t.usage
	l.mu.Lock()
	holds := l.holds
	l.holds = nil
	l.mu.Unlock()
	for _, release := range holds {
		release()
	}
}

// PerUserLimits bound the load one person puts on the gateway, across all conversations. The
// zero value sets no limits; the gateway's configuration sets them by default
// (agent.max_concurrent_turns_per_user, agent.user_rate).
type PerUserLimits struct {
	// MaxConcurrentTurns is how many turns started by messages one user may have running at
	// once; 0 or less: no cap. A message over the cap is answered, not queued: the user sends it
	// again when a turn finished.
	MaxConcurrentTurns int
	// RatePerMinute is how many turns one user may start per minute, on average; 0 or less: no
	// limit. Burst is how many may start at once; 0 means DefaultUserBurst.
	RatePerMinute float64
	Burst         int
}

// DefaultUserBurst is PerUserLimits.Burst when it is 0.
const DefaultUserBurst = 10

// Validate names the first setting out of range and how to fix it.
func (l PerUserLimits) Validate() error {
	switch {
	case math.IsNaN(l.RatePerMinute) || math.IsInf(l.RatePerMinute, 0):
		return fmt.Errorf("pipeline: agent.user_rate.per_minute = %v: use a positive number of turns a minute, or -1 for no limit", l.RatePerMinute)
	case l.Burst < 0:
		return fmt.Errorf("pipeline: agent.user_rate.burst = %d: use a positive number, or 0 for the default %d", l.Burst, DefaultUserBurst)
	}
	return nil
}

// userShards spread the per-user state over locks: users never wait for each other's lock
// unless they share a shard.
const userShards = 64

// maxUsersPerShard bounds the per-user state; idle users are forgotten first (see admit).
const maxUsersPerShard = 1024

// userLimits keeps, per user, the turns running and the rate limiter of new turns.
type userLimits struct {
	cfg    PerUserLimits
	seed   maphash.Seed
	shards [userShards]userShard
}

type userShard struct {
	mu    sync.Mutex
	users map[string]*userState
}

type userState struct {
	running int
	lim     *rate.Limiter // nil without a rate limit
}

// initUserLimits validates Config.PerUser and sets up the per-user state (New calls it).
func (p *Pipeline) initUserLimits() error {
	if err := p.cfg.PerUser.Validate(); err != nil {
		return err
	}
	cfg := p.cfg.PerUser
	if cfg.Burst == 0 {
		cfg.Burst = DefaultUserBurst
	}
	u := &userLimits{cfg: cfg, seed: maphash.MakeSeed()}
	for i := range u.shards {
		u.shards[i].users = map[string]*userState{}
	}
	p.users = u
	return nil
}

// refusal says why a user's new turn was not started, for the user.
type refusal string

// admit starts a turn of user at now, or says why not. release must be called when an admitted
// turn ended. It does no I/O.
func (u *userLimits) admit(user string, now time.Time) (release func(), why refusal) {
	if u.cfg.MaxConcurrentTurns <= 0 && u.cfg.RatePerMinute <= 0 {
		return func() {}, ""
	}
	sh := &u.shards[maphash.String(u.seed, user)%userShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := sh.users[user]
	if st == nil {
		if len(sh.users) >= maxUsersPerShard {
			u.forgetIdle(sh, now)
		}
		st = &userState{}
		if u.cfg.RatePerMinute > 0 {
			st.lim = rate.NewLimiter(rate.Limit(u.cfg.RatePerMinute/60), u.cfg.Burst)
		}
		sh.users[user] = st
	}
	if max := u.cfg.MaxConcurrentTurns; max > 0 && st.running >= max {
		return nil, refusal(fmt.Sprintf("You have %d requests running already, so I didn't start this one. "+
			"Please send it again when one of them has finished.", st.running))
	}
	if st.lim != nil && !st.lim.AllowN(now, 1) {
		wait := time.Duration((1 - st.lim.TokensAt(now)) / float64(st.lim.Limit()) * float64(time.Second))
		return nil, refusal(fmt.Sprintf("You're sending requests faster than I take them (%s a minute), so I didn't start this one. "+
			"Please send it again in %s.", strconv.FormatFloat(u.cfg.RatePerMinute, 'f', -1, 64), waitText(wait)))
	}
	st.running++
	return sync.OnceFunc(func() {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		st.running--
	}), ""
}

// forgetIdle drops the state of users with nothing running and a full rate bucket (nothing is
// lost); when that frees nothing, of every user with nothing running (they get a full burst
// back). Users with running turns are kept: they are bounded by the turns running. sh.mu is held.
func (u *userLimits) forgetIdle(sh *userShard, now time.Time) {
	for id, st := range sh.users {
		if st.running == 0 && (st.lim == nil || st.lim.TokensAt(now) >= float64(u.cfg.Burst)) {
			delete(sh.users, id)
		}
	}
	if len(sh.users) < maxUsersPerShard {
		return
	}
	for id, st := range sh.users {
		if st.running == 0 {
			delete(sh.users, id)
		}
	}
}

// waitText renders a wait for people, rounded up to the second: "12s", "1m05s".
func waitText(d time.Duration) string {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}

// runUserTurn runs the turn of a new message, unless its user has too many turns running or
// starts them too fast: then the user gets one short answer saying so and when to send it
// again (the event is handled once, so it is answered once).
func (p *Pipeline) runUserTurn(ctx context.Context, ctl *turnCtl, log *slog.Logger, ev *echogate.InboundEvent, msgs []echogate.Message, opts ...turnOption) {
	user := ev.Actor.QualifiedID(ev.Conversation.Platform)
	release, why := p.users.admit(user, p.cfg.Now())
	if why != "" {
		log.Info("turn not started: per-user limit", "user", user, "reason", string(why))
		p.d.Metrics.Reject(ev.Conversation.Platform, "user_limit")
		if p.scheduledNotStarted(ctx, ev, string(why)) { // scheduled.go: reported, not posted
			return
		}
		p.answerCommand(ctx, log, *ev, string(why))
		return
	}
	defer release()
	p.runTurn(ctx, ctl, log, ev, msgs, opts...)
}
