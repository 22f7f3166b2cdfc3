package cost

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// Ledger is what the Tracker reads spend from: the usage ledger (pipeline.Store satisfies it).
type Ledger interface {
	// SumUsage sums the tokens and CostUSD of the entries f selects. It blocks on the store and
	// honours ctx.
	SumUsage(ctx context.Context, f echogate.UsageFilter) (echogate.Usage, error)
}

// Limits are spend budgets in USD. 0 means unlimited.
type Limits struct {
	PerTurnUSD       float64 `json:"per_turn_usd"`        // one turn, all its model calls and tools
	PerSessionUSD    float64 `json:"per_session_usd"`     // one conversation, over its lifetime
	PerUserDayUSD    float64 `json:"per_user_day_usd"`    // one user, per calendar day
	PerChannelDayUSD float64 `json:"per_channel_day_usd"` // one channel (platform:channel), per calendar day
	PerDayUSD        float64 `json:"per_day_usd"`         // the whole gateway, per calendar day
	PerMonthUSD      float64 `json:"per_month_usd"`       // the whole gateway, per calendar month
}

// Validate reports the first limit that is negative or not a number, naming its config key.
func (l Limits) Validate() error {
	for _, f := range []struct {
		k LimitKind
		v float64
	}{
		{LimitPerTurn, l.PerTurnUSD}, {LimitPerSession, l.PerSessionUSD}, {LimitPerUserDay, l.PerUserDayUSD},
		{LimitPerChannelDay, l.PerChannelDayUSD}, {LimitPerDay, l.PerDayUSD}, {LimitPerMonth, l.PerMonthUSD},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("cost: budgets.%s = %v is not a valid amount: use a positive USD amount, or 0 for unlimited", f.k, f.v)
		}
	}
	return nil
}

// DefaultOutputAllowance is the number of output tokens a call is estimated at when the request
// sets no MaxTokens.
const DefaultOutputAllowance = 512

// Config configures a Tracker. The zero value means no limits, no prices (every estimate is 0),
// days and months in UTC, and no caching.
type Config struct {
	Limits Limits
	// Prices price the estimate of each call (the ledger's entries are priced when recorded).
	Prices Table
	// ModelFor names the model a request will really use, so its estimate is priced right when a
	// router picks the model per call (wire it to the router's choice); nil means req.Model.
	ModelFor func(req agent.Request) string
	// OutputAllowance is the output tokens assumed for a call without MaxTokens; default 512.
	OutputAllowance int
	// Location decides where days and months begin and end; default UTC.
	Location *time.Location
	// Now is the clock; default time.Now.
	Now func() time.Time
	// CacheTTL > 0 keeps each spend sum for that long, so a busy gateway does not query the
	// ledger several times per model call. Cached sums are kept current for this process's own
	// spend by Observe (wire it to the ledger path, after the entry is stored); spend of other
	// replicas shows up within CacheTTL. 0 (the default) queries the ledger on every check; use
	// it when Observe is not wired.
	CacheTTL time.Duration
	// Agent, when set, makes the limits an agent profile's own (agents[].budgets): every window
	// sums only the ledger entries of that agent, and the texts name it. The gateway-wide limits
	// are a Tracker without an Agent.
	Agent string
	// FailOpen lets calls through (logging an error) when the ledger cannot be read. By default a
	// ledger error fails the check, and with it the turn: spend is never unbounded.
	FailOpen bool
}

// Tracker enforces spend budgets before model calls: it implements the pipeline's Budget
// interface. It is safe for concurrent use; limits can be changed while it runs (SetLimits).
type Tracker struct {
	cfg    Config
	ledger Ledger
	log    *slog.Logger
	limits atomic.Pointer[Limits]
	period atomic.Pointer[period] // the day the last check fell in (bounds)

	res      *reservations // estimates of calls in flight (reserve.go)
	mu       sync.Mutex
	cache    map[echogate.UsageFilter]cached
	observed uint64 // Observe calls so far: a sum fetched across one is not cached
}

type cached struct {
	cost float64
	at   time.Time
}

// maxCache bounds the sum cache; expired entries are swept when it is reached.
const maxCache = 4096

// New validates cfg and returns a tracker reading spend from ledger. It does no I/O.
func New(cfg Config, ledger Ledger, log *slog.Logger) (*Tracker, error) {
	if ledger == nil {
		return nil, fmt.Errorf("cost: New needs a ledger (the store) to read spend from")
	}
	if err := cfg.Limits.Validate(); err != nil {
		return nil, err
	}
	switch {
	case cfg.OutputAllowance < 0:
		return nil, fmt.Errorf("cost: output allowance %d is negative: use a positive token count or 0 for the default %d", cfg.OutputAllowance, DefaultOutputAllowance)
	case cfg.CacheTTL < 0:
		return nil, fmt.Errorf("cost: cache TTL %s is negative: use a positive duration, or 0 to query the ledger on every check", cfg.CacheTTL)
	}
	for model, p := range cfg.Prices {
		for _, v := range []float64{p.InputPerMTok, p.OutputPerMTok, p.CachedInputPerMTok} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("cost: price of %s is not a valid amount (%v): use positive USD per million tokens", model, v)
			}
		}
	}
	if cfg.OutputAllowance == 0 {
		cfg.OutputAllowance = DefaultOutputAllowance
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Tracker{cfg: cfg, ledger: ledger, log: log, cache: map[echogate.UsageFilter]cached{}, res: newReservations()}
	lim := cfg.Limits
	t.limits.Store(&lim)
	return t, nil
}

// Limits returns the limits in force.
func (t *Tracker) Limits() Limits { return *t.limits.Load() }

// SetLimits replaces the limits (the admin API changes them without a restart). The next Check
// uses them. It returns an error naming the invalid field and keeps the old limits.
func (t *Tracker) SetLimits(l Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	t.limits.Store(&l)
	return nil
}

// Estimate is the estimated USD cost of req: input tokens ≈ all message text / 4 (plus the tools
// offered and a few tokens per message), output tokens = MaxTokens or Config.OutputAllowance,
// priced for Config.ModelFor(req) (default req.Model). An unknown model estimates at 0.
func (t *Tracker) Estimate(req agent.Request) float64 {
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content) + len(m.Name) + 16 // role and framing, about 4 tokens
		for _, c := range m.ToolCalls {
			chars += len(c.Name) + len(c.Arguments) + len(c.ID)
		}
		chars += len(m.Images) * 85 * 4 // a low-detail image is 85 tokens
	}
	for _, s := range req.Tools {
		chars += len(s.Name) + len(s.Description) + len(s.Parameters)
	}
	out := req.MaxTokens
	if out <= 0 {
		out = t.cfg.OutputAllowance
	}
	model := req.Model
	if t.cfg.ModelFor != nil {
		if m := t.cfg.ModelFor(req); m != "" {
			model = m
		}
	}
	return t.cfg.Prices.Price(echogate.Usage{Model: model, InputTokens: int64((chars + 3) / 4), OutputTokens: int64(out)})
}

// window is one limit as it applies to a scope at a moment.
type window struct {
	kind   LimitKind
	limit  float64
	filter echogate.UsageFilter
	resets time.Time // zero: never by time
}

// windows returns the limits that apply to s, most specific first.
func (t *Tracker) windows(l Limits, s Scope, now time.Time) []window {
	if l == (Limits{}) {
		return nil // no budgets: nothing to compute, on every model call
	}
	var day, nextDay, month, nextMonth time.Time
	if l.PerUserDayUSD > 0 || l.PerChannelDayUSD > 0 || l.PerDayUSD > 0 || l.PerMonthUSD > 0 {
		day, nextDay, month, nextMonth = t.bounds(now)
	}
	var w []window
	add := func(kind LimitKind, limit float64, ok bool, f echogate.UsageFilter, resets time.Time) {
		if limit > 0 && ok {
			f.Agent = t.cfg.Agent
			w = append(w, window{kind, limit, f, resets})
		}
	}
	add(LimitPerTurn, l.PerTurnUSD, s.Turn != "", echogate.UsageFilter{Turn: s.Turn}, time.Time{})
	add(LimitPerSession, l.PerSessionUSD, s.Session != "", echogate.UsageFilter{Session: s.Session}, time.Time{})
	add(LimitPerUserDay, l.PerUserDayUSD, s.UserID != "", echogate.UsageFilter{UserID: s.UserID, Since: day, Until: nextDay}, nextDay)
	add(LimitPerChannelDay, l.PerChannelDayUSD, s.Channel != "", echogate.UsageFilter{Channel: s.Channel, Since: day, Until: nextDay}, nextDay)
	add(LimitPerDay, l.PerDayUSD, true, echogate.UsageFilter{Since: day, Until: nextDay}, nextDay)
	add(LimitPerMonth, l.PerMonthUSD, true, echogate.UsageFilter{Since: month, Until: nextMonth}, nextMonth)
	return w
}

// bounds returns the start of now's day and month and of the next ones, in the configured
// location (DST-safe: days are calendar days, not 24h).
// The bounds of the last day asked for are kept: every check of that day reuses them.
func (t *Tracker) bounds(now time.Time) (day, nextDay, month, nextMonth time.Time) {
	if p := t.period.Load(); p != nil && !now.Before(p.day) && now.Before(p.nextDay) {
		return p.day, p.nextDay, p.month, p.nextMonth
	}
	n := now.In(t.cfg.Location)
	y, m, d := n.Date()
	p := &period{day: time.Date(y, m, d, 0, 0, 0, 0, t.cfg.Location), month: time.Date(y, m, 1, 0, 0, 0, 0, t.cfg.Location)}
	p.nextDay, p.nextMonth = p.day.AddDate(0, 0, 1), p.month.AddDate(0, 1, 0)
	t.period.Store(p)
	return p.day, p.nextDay, p.month, p.nextMonth
}

// period is a calendar day and its month, in the tracker's location (see bounds).
type period struct{ day, nextDay, month, nextMonth time.Time }

// Check returns nil when the call req may run within every budget that applies to s: for each
// limit, the spend so far plus what calls in flight hold (Reserve) must be below it and, with
// the call's estimate (Estimate), stay within it. Limits are checked most specific first (turn,
// session, user day, channel day, gateway day, gateway month); the first one hit is reported.
// Otherwise it returns a *LimitError (wrapping agent.ErrBudget) whose text tells the user which
// limit was hit and when it resets; for background work (Trigger consolidation or scheduled) it
// also wraps ErrDeferred. Check holds nothing once it returns: a caller that runs the call while
// others may check uses Reserve.
//
// Check blocks on at most one ledger query per limit that applies (none for cached sums) and
// honours ctx. A ledger error fails the check (a plain error, not ErrBudget) unless
// Config.FailOpen.
func (t *Tracker) Check(ctx context.Context, s Scope, req agent.Request) error {
	release, err := t.Reserve(ctx, s, req)
	if err != nil {
		return err
	}
	release()
	return nil
}

func background(tr echogate.UsageTrigger) bool {
	return tr == echogate.TriggerConsolidation || tr == echogate.TriggerScheduled
}

// limitError is the refusal of a call estimated at est by window w, where spent is in the ledger
// and held is held by other calls in flight.
func (t *Tracker) limitError(w window, s Scope, spent, held, est float64, now time.Time) *LimitError {
	trigger := string(s.Trigger)
	if trigger == "" {
		trigger = string(echogate.TriggerMessage)
	}
	le := &LimitError{Limit: w.kind, LimitUSD: w.limit, SpentUSD: spent, HeldUSD: held, EstimateUSD: est, ResetsAt: w.resets,
		Deferred: background(s.Trigger), Trigger: trigger}
	var b strings.Builder
	fmt.Fprintf(&b, "%s of %s ", t.limitName(w.kind), USD(w.limit))
	switch {
	case spent >= w.limit-1e-9:
		fmt.Fprintf(&b, "is used up (%s spent)", USD(spent))
	case held > 0:
		fmt.Fprintf(&b, "would be exceeded by this request (%s spent, %s held by requests still running, this call needs about %s)",
			USD(spent), USD(held), USD(est))
	default:
		fmt.Fprintf(&b, "would be exceeded by this request (%s spent, this call needs about %s)", USD(spent), USD(est))
	}
	switch w.kind {
	case LimitPerTurn:
		b.WriteString("; send a new message to continue in a new turn")
	case LimitPerSession:
		b.WriteString("; start a new conversation to continue")
	default:
		b.WriteString("; it resets ")
		b.WriteString(t.resetText(w.kind, w.resets, now))
	}
	le.text = b.String()
	return le
}

// limitName names a limit for people, saying whose it is when it is an agent's own.
func (t *Tracker) limitName(k LimitKind) string {
	a := t.cfg.Agent
	switch {
	case a == "":
		return limitName(k)
	case k == LimitPerDay:
		return "the " + a + " agent's daily budget"
	case k == LimitPerMonth:
		return "the " + a + " agent's monthly budget"
	}
	return limitName(k) + " with the " + a + " agent"
}

func limitName(k LimitKind) string {
	switch k {
	case LimitPerTurn:
		return "this turn's budget"
	case LimitPerSession:
		return "this conversation's budget"
	case LimitPerUserDay:
		return "your daily budget"
	case LimitPerChannelDay:
		return "this channel's daily budget"
	case LimitPerDay:
		return "the gateway's daily budget"
	case LimitPerMonth:
		return "the gateway's monthly budget"
	}
	return string(k)
}

// resetText is "at 00:00 UTC (in 5h12m)" for a day, "on Aug 1 at 00:00 UTC (in 12d3h)" for a month.
func (t *Tracker) resetText(k LimitKind, at, now time.Time) string {
	local := at.In(t.cfg.Location)
	clock := local.Format("15:04 MST")
	in := Until(at.Sub(now))
	if k == LimitPerMonth {
		return "on " + local.Format("Jan 2") + " at " + clock + " (in " + in + ")"
	}
	return "at " + clock + " (in " + in + ")"
}

// Until renders a positive duration for people: "5h12m", "12d3h", "45m", "less than a minute".
func Until(d time.Duration) string {
	d = d.Round(time.Minute)
	if d < time.Minute {
		return "less than a minute"
	}
	days := int(d / (24 * time.Hour))
	h := int(d % (24 * time.Hour) / time.Hour)
	m := int(d % time.Hour / time.Minute)
	switch {
	case days > 0:
		return fmt.Sprintf("%dd%dh", days, h)
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	}
	return fmt.Sprintf("%dm", m)
}

// USD renders an amount: two decimals from $1 up, up to four significant decimals below.
func USD(v float64) string {
	switch {
	case v == 0:
		return "$0.00"
	case v < 0:
		return "-" + USD(-v)
	case v >= 1:
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	case v < 0.0001:
		return "<$0.0001"
	}
	s := strconv.FormatFloat(v, 'f', 4, 64)
	s = strings.TrimRight(s, "0")
	if i := strings.IndexByte(s, '.'); len(s)-i-1 < 2 {
		s += strings.Repeat("0", 2-(len(s)-i-1))
	}
	return "$" + s
}

// spend returns the cost f selects, from the cache when it is fresh enough.
func (t *Tracker) spend(ctx context.Context, f echogate.UsageFilter, now time.Time) (float64, error) {
	ttl := t.cfg.CacheTTL
	var gen uint64
	if ttl > 0 {
		t.mu.Lock()
		c, ok := t.cache[f]
		gen = t.observed
		t.mu.Unlock()
		if ok && now.Sub(c.at) < ttl && !now.Before(c.at) {
			return c.cost, nil
		}
	}
	u, err := t.ledger.SumUsage(ctx, f)
	if err != nil {
		return 0, err
	}
	if ttl > 0 {
		t.mu.Lock()
		// A sum read while an Observe ran may or may not include that entry: use it, don't keep it.
		if t.observed == gen {
			if len(t.cache) >= maxCache {
				for k, c := range t.cache {
					if now.Sub(c.at) >= ttl || now.Before(c.at) {
						delete(t.cache, k)
					}
				}
				if len(t.cache) >= maxCache {
					clear(t.cache)
				}
			}
			t.cache[f] = cached{cost: u.CostUSD, at: now}
		}
		t.mu.Unlock()
	}
	return u.CostUSD, nil
}

// Observe adds a just-recorded ledger entry to the cached sums it belongs to, so this process's
// own spend counts at once. Call it after the entry was stored (the ledger path), once per entry.
// It does no I/O and is a no-op without a cache (Config.CacheTTL 0).
func (t *Tracker) Observe(rec echogate.UsageRecord) {
	if t.cfg.CacheTTL <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observed++
	if rec.Usage.CostUSD == 0 {
		return
	}
	for f, c := range t.cache {
		if matches(f, rec) {
			c.cost += rec.Usage.CostUSD
			t.cache[f] = c
		}
	}
}

// matches reports whether the ledger entry rec is one filter f selects.
func matches(f echogate.UsageFilter, rec echogate.UsageRecord) bool {
	switch {
	case f.Turn != "" && f.Turn != rec.Turn,
		f.Session != "" && f.Session != rec.Session,
		f.UserID != "" && f.UserID != rec.UserID,
		f.Channel != "" && f.Channel != rec.Channel,
		f.Agent != "" && f.Agent != rec.Agent,
		!f.Since.IsZero() && rec.At.Before(f.Since),
		!f.Until.IsZero() && !rec.At.Before(f.Until):
		return false
	}
	return true
}
