// Package router is the ModelRouter: an agent.Model decorator that picks a light or a strong model
// per call from the request (rules on the last user message, the conversation's size, attachments,
// tool need, explicit overrides), and fails over along the route's fallback chain when a model is
// unavailable (429, 5xx, timeouts, an open circuit breaker).
//
// Every model has its own circuit breaker (internal/breaker: gobreaker on Config.Clock): the
// router asks it before the stream opens and reports the outcome when Generate returns. An open
// breaker makes the router skip that model at once, without a request, until its cool-down ends;
// then one probe call decides whether it closes again.
//
// Failover happens only on errors that wrap agent.ErrUnavailable and only while no answer text has
// reached onDelta: the user never sees two answers. Each attempt's usage reaches the ledger exactly
// once: the returned Response carries the usage of the attempt it describes (the agent loop reports
// it), and every earlier, failed attempt is reported through the usage reporter (see
// agent.Request.ReportUsage and Config.OnUsage) before the next attempt starts.
package router

import (
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
)

// Defaults of Config.
const (
	DefaultLongChars        = 2000
	DefaultLongContextChars = 48000 // about 12k tokens
	DefaultBreakerFailures  = 3
	DefaultBreakerCoolDown  = 30 * time.Second
	DefaultBreakerProbes    = 1
)

// Route sends requests matching When to Model, falling back along Fallback in order.
type Route struct {
	Name     string   // unique; shown in RouteReason and logs
	When     Rule     // empty means RuleDefault
	Model    string   // the primary model; a key of the models map given to New
	Fallback []string // tried in order when the previous model is unavailable
}

// BreakerConfig tunes every model's circuit breaker. The zero value means the defaults.
type BreakerConfig struct {
	// Failures is the number of consecutive counted failures (errors wrapping
	// agent.ErrUnavailable, or a stream that broke mid-answer) that opens the breaker. Default 3.
	Failures int
	// CoolDown is how long an open breaker skips its model before letting a probe through.
	// Default 30s. It runs on Config.Clock.
	CoolDown time.Duration
	// Probes is the number of calls let through while half-open; that many successes in a row
	// close the breaker, one failure opens it again. Default 1.
	Probes int
}

// Config configures a Router. The zero value routes every request to the request's own model
// (agent.Request.Model, i.e. the configured default model), behind a breaker, without fallback.
type Config struct {
	// Routes are evaluated in order; the first whose rule matches the request wins. A route with
	// RuleDefault matches everything and must be the last.
	Routes []Route
	// Default names the route taken when no rule matched. Empty means the route whose rule is
	// RuleDefault, and without one the request's own model, without fallback.
	Default string
	// LongChars is RuleLong's limit on the last user message, in characters. Default 2000.
	LongChars int
	// LongContextChars is RuleLong's limit on the whole conversation's text. Default 48000.
	LongContextChars int
	// UserModels and ChannelModels pin a model for a user (qualified id, "slack:U123") or a
	// channel ("platform:channel"). agent.Hints.Override (the /model command) wins over a user's
	// model, which wins over a channel's, which wins over the rules. The pinned model is tried
	// first; the chain of the route the rules pick follows it as fallback.
	UserModels    map[string]string
	ChannelModels map[string]string
	Breaker       BreakerConfig
	// Clock stamps breaker state changes and failures for BreakerStatus; default time.Now.
	Clock func() time.Time
	// OnUsage receives the usage of every failed attempt that was followed by another attempt
	// (Failed set, Model named, real tokens, usually zero). Wire it to the same ledger entry
	// point as agent.Runtime.ReportUsage. The request's own agent.Request.ReportUsage takes
	// precedence (the agent loop sets it: it knows the turn); OnUsage is the fallback for calls
	// without one. It is called synchronously from Generate and must not block for long.
	OnUsage func(echogate.Usage)
	// OnState is called when a model's breaker changes state ("closed", "half-open", "open"),
	// e.g. to set a metric. It runs with the breaker's lock held: it must return quickly and must
	// not call Breakers.
	OnState func(model, from, to string)
}

var _ agent.Model = (*Router)(nil)

// Router is an agent.Model that routes and fails over. It is safe for concurrent use.
type Router struct {
	cfg      Config
	models   map[string]agent.Model
	breakers map[string]*breaker
	routes   map[string]*Route
	def      *Route // nil: the request's own model
	log      *slog.Logger
}

// New validates cfg against models (model name → the provider serving it; the name is what the
// provider is asked for) and returns a router. It does no I/O.
func New(cfg Config, models map[string]agent.Model, log *slog.Logger) (*Router, error) {
	if len(models) == 0 {
		return nil, fmt.Errorf("router: no models: configure at least one provider with a model under models.providers")
	}
	for name, m := range models {
		if strings.TrimSpace(name) == "" || m == nil {
			return nil, fmt.Errorf("router: model %q has no provider (empty name or nil model): check models.providers", name)
		}
	}
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	known := sortedKeys(models)
	unknown := func(what, model string) error {
		return fmt.Errorf("router: %s names model %q, which no provider serves: add it to a provider's models or use one of %s", what, model, strings.Join(known, ", "))
	}

	r := &Router{models: models, breakers: make(map[string]*breaker, len(models)), routes: map[string]*Route{}, log: log}
	routes := make([]Route, len(cfg.Routes))
	for i, rt := range cfg.Routes {
		rt, err := checkRoute(i, rt, len(cfg.Routes), r.routes, models, unknown)
		if err != nil {
			return nil, err
		}
		routes[i] = rt
		r.routes[rt.Name] = &routes[i]
	}
	cfg.Routes = routes
	switch {
	case cfg.Default != "":
		r.def = r.routes[cfg.Default]
		if r.def == nil {
			return nil, fmt.Errorf("router: default route %q does not exist: name one of the routes", cfg.Default)
		}
	case len(routes) > 0 && routes[len(routes)-1].When == RuleDefault:
		r.def = &routes[len(routes)-1]
	}
	for who, m := range cfg.UserModels {
		if models[m] == nil {
			return nil, unknown("the model override of user "+who, m)
		}
	}
	for ch, m := range cfg.ChannelModels {
		if models[m] == nil {
			return nil, unknown("the model override of channel "+ch, m)
		}
	}
	r.cfg = cfg
	for _, name := range known {
		r.breakers[name] = newBreaker(name, cfg.Breaker, cfg.Clock, cfg.OnState)
	}
	return r, nil
}

// withDefaults refuses negative settings and fills the zero ones with their defaults.
func (cfg *Config) withDefaults() error {
	switch {
	case cfg.LongChars < 0:
		return fmt.Errorf("router: long_chars %d is negative: use a positive number or 0 for the default %d", cfg.LongChars, DefaultLongChars)
	case cfg.LongContextChars < 0:
		return fmt.Errorf("router: long_context_chars %d is negative: use a positive number or 0 for the default %d", cfg.LongContextChars, DefaultLongContextChars)
	case cfg.Breaker.Failures < 0:
		return fmt.Errorf("router: breaker failures %d is negative: use a positive number or 0 for the default %d", cfg.Breaker.Failures, DefaultBreakerFailures)
	case cfg.Breaker.CoolDown < 0:
		return fmt.Errorf("router: breaker cool-down %s is negative: use a positive duration or 0 for the default %s", cfg.Breaker.CoolDown, DefaultBreakerCoolDown)
	case cfg.Breaker.Probes < 0:
		return fmt.Errorf("router: breaker probes %d is negative: use a positive number or 0 for the default %d", cfg.Breaker.Probes, DefaultBreakerProbes)
	}
	if cfg.LongChars == 0 {
		cfg.LongChars = DefaultLongChars
	}
	if cfg.LongContextChars == 0 {
		cfg.LongContextChars = DefaultLongContextChars
	}
	if cfg.Breaker.Failures == 0 {
		cfg.Breaker.Failures = DefaultBreakerFailures
	}
	if cfg.Breaker.CoolDown == 0 {
		cfg.Breaker.CoolDown = DefaultBreakerCoolDown
	}
	if cfg.Breaker.Probes == 0 {
		cfg.Breaker.Probes = DefaultBreakerProbes
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return nil
}

// checkRoute validates route i of n against the routes before it (byName) and the models, and
// returns it normalised (name trimmed, rule defaulted, its own copy of the fallbacks).
func checkRoute(i int, rt Route, n int, byName map[string]*Route, models map[string]agent.Model, unknown func(what, model string) error) (Route, error) {
	rt.Fallback = slices.Clone(rt.Fallback)
	rt.Name = strings.TrimSpace(rt.Name)
	if rt.Name == "" {
		return rt, fmt.Errorf("router: route %d has no name: give every route a unique name", i+1)
	}
	if byName[rt.Name] != nil {
		return rt, fmt.Errorf("router: route name %q is used twice: route names must be unique", rt.Name)
	}
	if rt.When == "" {
		rt.When = RuleDefault
	}
	if !rt.When.valid() {
		return rt, fmt.Errorf("router: route %s: unknown rule %q: use one of %s", rt.Name, rt.When, joinRules())
	}
	if rt.When == RuleDefault && i != n-1 {
		return rt, fmt.Errorf("router: route %s matches every request (when: default), so the routes after it are never used: move it last", rt.Name)
	}
	if rt.Model == "" {
		return rt, fmt.Errorf("router: route %s has no model: set its model", rt.Name)
	}
	if models[rt.Model] == nil {
		return rt, unknown("route "+rt.Name, rt.Model)
	}
	seen := map[string]bool{rt.Model: true}
	for _, fb := range rt.Fallback {
		if models[fb] == nil {
			return rt, unknown("route "+rt.Name+" fallback", fb)
		}
		if seen[fb] {
			return rt, fmt.Errorf("router: route %s lists model %q twice (model and fallback): list each model once", rt.Name, fb)
		}
		seen[fb] = true
	}
	return rt, nil
}

func joinRules() string {
	var s []string
	for _, r := range Rules() {
		s = append(s, string(r))
	}
	return strings.Join(s, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Models returns the names of the models the router can use, sorted (for the /model command).
func (r *Router) Models() []string { return sortedKeys(r.models) }

// Known reports whether a provider serves model, i.e. whether an override to it takes effect.
func (r *Router) Known(model string) bool { return r.models[model] != nil }

// Breakers returns every model's breaker, sorted by model name.
func (r *Router) Breakers() []BreakerStatus {
	out := make([]BreakerStatus, 0, len(r.breakers))
	for _, name := range sortedKeys(r.breakers) {
		out = append(out, r.breakers[name].status())
	}
	return out
}

// Choice is a routing decision: the models to try in order and why.
type Choice struct {
	Route  string   // the route's name; "override" for a pinned model, "default" for the request's model
	Models []string // primary first, then fallbacks; never empty
	Reason string   // e.g. "route code: fenced code block"
}

// Routes returns the names of the configured routes.
func (r *Router) Routes() []string {
	out := make([]string, 0, len(r.cfg.Routes))
	for _, rt := range r.cfg.Routes {
		out = append(out, rt.Name)
	}
	return out
}

// Choose applies the overrides and the rules to req. It does no I/O.
func (r *Router) Choose(req agent.Request) (Choice, error) {
	rc, err := r.byRules(req)
	if err != nil {
		return Choice{}, err
	}
	pin, why := "", ""
	switch h := req.Hints; {
	case h.Override != "" && r.models[h.Override] != nil:
		pin, why = h.Override, "override "+h.Override+" (requested)"
	case h.UserID != "" && r.cfg.UserModels[h.UserID] != "":
		pin, why = r.cfg.UserModels[h.UserID], "override "+r.cfg.UserModels[h.UserID]+" (user "+h.UserID+")"
	case h.Channel != "" && r.cfg.ChannelModels[h.Channel] != "":
		pin, why = r.cfg.ChannelModels[h.Channel], "override "+r.cfg.ChannelModels[h.Channel]+" (channel "+h.Channel+")"
	}
	if h := req.Hints.Override; h != "" && r.models[h] == nil {
		rc.Reason += "; override " + h + " ignored: unknown model"
	}
	if pin == "" {
		return rc, nil
	}
	models := []string{pin}
	for _, m := range rc.Models {
		if m != pin {
			models = append(models, m)
		}
	}
	return Choice{Route: "override", Models: models, Reason: why}, nil
}

func (r *Router) byRules(req agent.Request) (Choice, error) {
	if rt := r.routes[req.Hints.Route]; rt != nil {
		return routeChoice(rt, "route "+rt.Name+": named by the agent profile"), nil
	}
	last := lastUser(req.Messages)
	for i := range r.cfg.Routes {
		rt := &r.cfg.Routes[i]
		if rt.When == RuleDefault {
			continue // only as the default, below
		}
		if ok, why := r.match(rt.When, req, last); ok {
			return routeChoice(rt, "route "+rt.Name+": "+why), nil
		}
	}
	if r.def != nil {
		return routeChoice(r.def, "route "+r.def.Name+": default"), nil
	}
	if r.models[req.Model] == nil {
		return Choice{}, fmt.Errorf("router: no route matched and the request's model %q is not served by any provider (models: %s): add it to a provider's models or add a route with when: default: %w",
			req.Model, strings.Join(r.Models(), ", "), ErrUnknownModel)
	}
	return Choice{Route: "default", Models: []string{req.Model}, Reason: "default model"}, nil
}

func routeChoice(rt *Route, reason string) Choice {
	return Choice{Route: rt.Name, Models: append([]string{rt.Model}, rt.Fallback...), Reason: reason}
}
