package pipeline

import (
	"context"
	"log/slog"
)

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
