package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent"
	"github.com/echogate/echogate/internal/lazyre"
)

// reportFailed reports the usage of a failed attempt: to the request's own reporter (set by the
// agent loop, it knows the turn), else to Config.OnUsage.
func (r *Router) reportFailed(req agent.Request, u echogate.Usage, log *slog.Logger) {
	if req.ReportUsage != nil {
		req.ReportUsage(u)
		return
	}
	if r.cfg.OnUsage != nil {
		r.cfg.OnUsage(u)
		return
	}
	log.Warn("router: usage of a failed attempt not recorded: set router Config.OnUsage or agent.Request.ReportUsage",
		"in", u.InputTokens, "out", u.OutputTokens)
}

// attempt is one model call that failed in a way that allows trying the next model.
type attempt struct {
	resp agent.Response
	err  error
}

// Generate routes req and streams the answer of the first model that answers. It blocks until a
// model answered, every model of the chain failed or was skipped, or ctx ended.
//
// Failover to the next model happens when an attempt fails with an error wrapping
// agent.ErrUnavailable before any answer text was delivered to onDelta, or when a model's breaker
// does not allow the call. Any other error (a bad request, an error returned by onDelta, ctx
// ending, a stream that broke mid-answer) is returned at once, wrapped, with that attempt's
// Response. When every model failed, the last failure is returned (wrapping
// agent.ErrUnavailable); when every model was skipped, the error wraps ErrBreakerOpen.
//
// The Response names the model that answered (or failed last) in Model and Usage.Model, and says
// why in RouteReason ("route code: fenced code block; fallback after gpt-4o: 503").
func (r *Router) Generate(ctx context.Context, req agent.Request, onDelta func(agent.Delta) error) (agent.Response, error) {
	// The model call runs on top of this frame, in every turn: what is only needed when an
	// attempt fails or is skipped (notes, logs, errors) lives in genState and its methods.
	g := &genState{r: r, session: req.Hints.Session, channel: req.Hints.Channel}
	choice, err := r.Choose(req)
	if err != nil {
		return agent.Response{Model: req.Model, Usage: echogate.Usage{Kind: echogate.UsageModel, Model: req.Model, Failed: true}}, err
	}
	g.route, g.notes = choice.Route, []string{choice.Reason}

	var (
		delivered bool  // answer text reached onDelta: no failover any more
		cbErr     error // onDelta's own error
	)
	deliver := func(d agent.Delta) error {
		if d.Text != "" {
			delivered = true
		}
		if onDelta == nil {
			return nil
		}
		if err := onDelta(d); err != nil {
			cbErr = err
			return err
		}
		return nil
	}

	for i, name := range choice.Models {
		b := r.breakers[name]
		done, ok := b.allow()
		if !ok {
			g.skip(name, b)
			continue
		}
		if g.pending != nil {
			// Another attempt starts: the previous one is final, report it now.
			r.reportFailed(req, g.pending.resp.Usage, g.log())
			g.pending = nil
		}
		areq := req
		areq.Model = name
		resp, err := r.models[name].Generate(ctx, areq, deliver)
		if resp.Model == "" {
			resp.Model = name
		}
		if resp.Usage.Model == "" {
			resp.Usage.Model = name
		}
		if resp.Usage.Kind == "" {
			resp.Usage.Kind = echogate.UsageModel
		}
		counted := r.outcome(ctx, err, delivered, cbErr)
		if counted == errCounted {
			b.failed(r.cfg.Clock(), err)
		}
		done(counted)

		if err == nil {
			g.answered(ctx, name, &resp)
			return resp, nil
		}
		if err := g.failed(ctx, name, &resp, err, delivered, cbErr, i == len(choice.Models)-1); err != nil {
			return resp, err
		}
	}
	return g.end(choice.Models[0])
}

// genState is what Generate keeps about the route's attempts besides the running one: the
// route, the notes of its RouteReason, the models skipped and the last failed attempt.
type genState struct {
	r       *Router
	session echogate.SessionKey
	channel string
	route   string
	notes   []string
	skipped []string
	pending *attempt // the last failed attempt, not yet reported
}

// log is the router's logger with the request's ids, built only when something is logged (an
// answered call logs nothing at info).
func (g *genState) log() *slog.Logger {
	return g.r.log.With("session", g.session, "channel", g.channel)
}

func (g *genState) reason() string { return strings.Join(g.notes, "; ") }

// skip notes a model its breaker did not let through.
func (g *genState) skip(name string, b *breaker) {
	g.skipped = append(g.skipped, name)
	g.notes = append(g.notes, "skipped "+name+": breaker "+b.cb.State().String())
	g.log().Warn("model skipped: circuit breaker not allowing calls", "model", name, "route", g.route, "state", b.cb.State().String())
}

// answered completes the response of the model that answered.
func (g *genState) answered(ctx context.Context, name string, resp *agent.Response) {
	resp.RouteReason = g.reason()
	if g.r.log.Enabled(ctx, slog.LevelDebug) {
		g.log().Debug("model answered", "model", name, "route", g.route, "reason", resp.RouteReason)
	}
}

// failed handles an attempt that failed with err: it returns the error to end Generate with,
// or nil when the next model may be tried (the attempt is then pending, reported when the next
// starts or the route ends).
func (g *genState) failed(ctx context.Context, name string, resp *agent.Response, err error, delivered bool, cbErr error, last bool) error {
	resp.Usage.Failed = true
	if !g.r.failover(ctx, err, delivered, cbErr) {
		resp.RouteReason = g.reason()
		return fmt.Errorf("router: %s (%s): %w", name, resp.RouteReason, err)
	}
	short := shortError(err)
	if !last {
		g.notes = append(g.notes, "fallback after "+name+": "+short)
		g.log().Warn("model unavailable, falling back", "model", name, "route", g.route, "err", err)
	} else {
		g.notes = append(g.notes, name+" failed: "+short)
	}
	g.pending = &attempt{resp: *resp, err: err}
	return nil
}

// end is Generate's outcome when no model answered: the last failure, or, when every model
// was skipped, ErrBreakerOpen.
func (g *genState) end(first string) (agent.Response, error) {
	if p := g.pending; p != nil {
		p.resp.RouteReason = g.reason()
		g.log().Error("every model of the route failed", "route", g.route, "reason", p.resp.RouteReason, "err", p.err)
		return p.resp, fmt.Errorf("router: every model failed (%s): %w", p.resp.RouteReason, p.err)
	}
	g.log().Error("every model of the route is skipped by its breaker", "route", g.route, "models", strings.Join(g.skipped, ","))
	return agent.Response{
			Model:       first,
			Usage:       echogate.Usage{Kind: echogate.UsageModel, Model: first, Failed: true},
			RouteReason: g.reason(),
		}, fmt.Errorf("router: no model available (%s): every breaker of %s is open; retry after the cool-down (%s): %w",
			g.reason(), strings.Join(g.skipped, ", "), g.r.cfg.Breaker.CoolDown, ErrBreakerOpen)
}

// outcome is what a breaker learns from one attempt: nil (success), errCounted (the model failed)
// or errExcluded (not the model's fault, or not a sign of its health).
func (r *Router) outcome(ctx context.Context, err error, delivered bool, cbErr error) error {
	switch {
	case err == nil:
		return nil
	case cbErr != nil, ctx.Err() != nil:
		return errExcluded // the caller stopped it
	case isUnavailable(err), delivered:
		return errCounted // 429/5xx/timeout, or the stream broke mid-answer
	default:
		return errExcluded // a bad request, auth, unknown model: not the endpoint's health
	}
}

// failover reports whether a failed attempt may be followed by the next model.
func (r *Router) failover(ctx context.Context, err error, delivered bool, cbErr error) bool {
	return !delivered && cbErr == nil && ctx.Err() == nil && isUnavailable(err)
}

func isUnavailable(err error) bool { return errors.Is(err, agent.ErrUnavailable) }

var httpStatusRE = lazyre.New(`\bHTTP (\d{3})\b`)

// shortError is a few words for RouteReason: the HTTP status, "429", "timeout" or "unavailable".
func shortError(err error) string {
	if _, ok := echogate.RetryAfter(err); ok {
		return "429"
	}
	if m := httpStatusRE.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	s := strings.ToLower(err.Error())
	switch {
	case strings.Contains(s, "timed out"), strings.Contains(s, "timeout"), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case strings.Contains(s, "connection refused"), strings.Contains(s, "no such host"), strings.Contains(s, "connection reset"):
		return "unreachable"
	}
	return "unavailable"
}
