package pipeline

import (
	"context"
	"log/slog"
	"sync"

	"github.com/echogate/echogate"
)

// handle processes one dequeued event. It never returns an error: failures are answered with the
// fallback text and logged with the turn id.
func (p *Pipeline) handle(ctx context.Context, ctl *turnCtl, it *item) {
	ev := &it.ev
	log := deferredLogger(p.log, slog.Any("session", ev.SessionKey()), slog.String("event_id", ev.ID),
		slog.String("channel", ev.Conversation.Platform))
	done := &completion{p: p, key: ev.DedupeKey(), log: log}
	ctl.done = done
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
		defer cancel()
		done.complete(cctx)
	}()
	if ev.Actor.IsBot && !ev.Actor.IsSelf {
		return // adapters drop these; never answer a bot
	}
	var opts []turnOption
	if it.replay {
		ctl.locked = nil // recovery may resume or cancel the pause read with the lock
		var handled bool
		if opts, handled = p.recoverReplay(ctx, ctl, log, done, it); handled {
			return
		}
	}
	wait, opt := p.writeSession(ctx, log, ev)
	ctl.sessionWritten = wait
	defer wait()
	if opt != nil {
		opts = append(opts, opt)
	}
	p.route(ctx, ctl, log, ev, opts)
}

// recoverReplay recovers a replayed event (recoverEvent) and returns the options of the turn that
// answers it, or handled when nothing is left to do. It is handle's, kept out of handle's
// frame: a turn runs on top of that frame (stack size, see work).
func (p *Pipeline) recoverReplay(ctx context.Context, ctl *turnCtl, log *slog.Logger, done *completion, it *item) (opts []turnOption, handled bool) {
	ev := &it.ev
	p.hist.drop(ev.SessionKey()) // recovery may write the transcript: see histthrough.go
	rc := p.recoverEvent(ctx, ctl, log, ev)
	if rc.deferred {
		done.take() // left unfinished, for a later replay
		if !p.deferReplay(*it) {
			log.Warn("pipeline: the deferred event waits for the next start")
		}
		return nil, true
	}
	if rc.handled {
		return nil, true
	}
	if rc.inputSaved {
		// The dead turn saved the user's message already: answer it without saving it again.
		opts = append(opts, withInputSaved())
	}
	if !rc.cont.IsZero() {
		opts = append(opts, withContinued(rc.cont))
	}
	return opts, false
}

// writeSession writes the session record while the pause is looked up and the turn starts:
// nothing reads it before the turn ends, and its write joins the turn's first commit (group
// commit). A session active in the last minute has it already (see sessionMarks): then the
// returned option lets the turn write it should its transcript show it gone. wait waits for
// the write (handle keeps it on the turn's control, see waitSessionWrite).
func (p *Pipeline) writeSession(ctx context.Context, log *slog.Logger, ev *echogate.InboundEvent) (func(), turnOption) {
	key, now := ev.SessionKey(), p.cfg.Now()
	info := echogate.SessionInfo{Key: key, Conversation: ev.Conversation, UserID: ev.Actor.QualifiedID(ev.Conversation.Platform),
		Ephemeral: ev.Ephemeral, CreatedAt: now, UpdatedAt: now}
	upserted := make(chan error, 1)
	var opt turnOption
	switch {
	case ev.Actor.IsSelf:
		upserted <- nil
	case p.marks.fresh(key, now):
		upserted <- nil
		opt = withUnrecordedSession(info)
	default:
		// Not tied to the turn: a stop must not leave the session unrecorded.
		uctx, ucancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
		go func() {
			defer ucancel()
			err := p.d.Store.UpsertSession(uctx, info)
			if err == nil {
				p.marks.mark(key, now)
			}
			upserted <- err
		}()
	}
	wait := sync.OnceFunc(func() {
		if err := <-upserted; err != nil {
			log.Error("pipeline: upsert session", "err", err)
		}
	})
	return wait, opt
}

// waitSessionWrite waits until the session record of the event being handled is written
// (writeSession); it returns at once when there is none to wait for.
func (c *turnCtl) waitSessionWrite() {
	if c != nil && c.sessionWritten != nil {
		c.sessionWritten()
	}
}

// takeCompletion takes the handled event's completion for a caller that writes it itself, in
// a TurnLog.FinishTurn: it returns the event's key, or false when the completion was written
// or taken already, or there is none.
func (c *turnCtl) takeCompletion() (string, bool) {
	if c == nil || c.done == nil || !c.done.take() {
		return "", false
	}
	return c.done.key, true
}

// completion marks an event handled exactly once: in the turn's end (TurnLog.FinishTurn) when
// a turn ran, else when handling ends.
type completion struct {
	p    *Pipeline
	key  string
	log  *slog.Logger
	once sync.Once
}

// take marks the event as completed by the caller, which writes the completion itself (in a
// FinishTurn call). It returns false when the completion was written or taken already.
func (c *completion) take() bool {
	taken := false
	c.once.Do(func() { taken = true })
	return taken
}

func (c *completion) complete(ctx context.Context) {
	c.once.Do(func() {
		if err := c.p.d.Store.CompleteEvent(ctx, c.key, c.p.cfg.Now()); err != nil {
			c.log.Error("pipeline: complete event", "err", err)
		}
	})
}

// deferredAttrs is a slog.Handler that adds its attributes to each record it handles instead
// of formatting them when the logger is made, as a handler's WithAttrs does: a per-event logger
// (handle) and the per-turn logger made from it cost two small slices until they log. The
// lines are the ones With would give: the attributes come first, then the record's own.
type deferredAttrs struct {
	h     slog.Handler
	attrs []slog.Attr
}

// deferredLogger returns log with attrs deferred (see deferredAttrs).
func deferredLogger(log *slog.Logger, attrs ...slog.Attr) *slog.Logger {
	return slog.New(&deferredAttrs{h: log.Handler(), attrs: attrs})
}

func (d *deferredAttrs) Enabled(ctx context.Context, l slog.Level) bool { return d.h.Enabled(ctx, l) }

func (d *deferredAttrs) Handle(ctx context.Context, r slog.Record) error {
	nr := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	nr.AddAttrs(d.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		nr.AddAttrs(a)
		return true
	})
	return d.h.Handle(ctx, nr)
}

func (d *deferredAttrs) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return d
	}
	return &deferredAttrs{h: d.h, attrs: append(d.attrs[:len(d.attrs):len(d.attrs)], attrs...)}
}

// WithGroup gives up deferring: the attributes so far stay outside the group.
func (d *deferredAttrs) WithGroup(name string) slog.Handler {
	if name == "" {
		return d
	}
	return d.h.WithAttrs(d.attrs).WithGroup(name)
}
