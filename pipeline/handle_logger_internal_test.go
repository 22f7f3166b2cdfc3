package pipeline

import (
	"bytes"
	"log/slog"
	"regexp"
	"testing"

	"github.com/echogate/echogate"
)

// A deferred logger writes the lines With writes, through text and JSON handlers, with nested
// attributes, groups after them, and levels the handler drops.
func TestDeferredLoggerWritesWhatWithWrites(t *testing.T) {
	stamp := regexp.MustCompile(`time=\S+ |"time":"[^"]*",`)
	for name, mk := range map[string]func(*bytes.Buffer) slog.Handler{
		"text": func(b *bytes.Buffer) slog.Handler {
			return slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo})
		},
		"json": func(b *bytes.Buffer) slog.Handler {
			return slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo})
		},
	} {
		write := func(deferred bool) string {
			var b bytes.Buffer
			base := slog.New(mk(&b)).With("gateway", "g1")
			var log *slog.Logger
			if deferred {
				log = deferredLogger(base, slog.Any("session", echogate.SessionKey("web:s1")), slog.String("event_id", "e1"))
			} else {
				log = base.With("session", echogate.SessionKey("web:s1"), "event_id", "e1")
			}
			turn := log.With("turn", "t_1", "agent", "default")
			turn.Info("turn finished", "status", "done", "input_tokens", 12)
			turn.Debug("dropped by the level")
			log.Error("pipeline: upsert session", "err", "disk full")
			turn.WithGroup("call").Warn("slow", "tool", "current_time")
			return stamp.ReplaceAllString(b.String(), "")
		}
		if got, want := write(true), write(false); got != want {
			t.Errorf("%s: deferred logger wrote\n%s\nwant (With)\n%s", name, got, want)
		}
	}
}

// BenchmarkTurnLoggers is the loggers handle and newTurn make for every event: deferred, and as
// With makes them; then the one line a turn logs.
func BenchmarkTurnLoggers(b *testing.B) {
	base := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	for _, tc := range []struct {
		name string
		mk   func() *slog.Logger
	}{
		{"deferred", func() *slog.Logger {
			return deferredLogger(base, slog.Any("session", echogate.SessionKey("web:s1")), slog.String("event_id", "e1"), slog.String("channel", "web"))
		}},
		{"with", func() *slog.Logger {
			return base.With("session", echogate.SessionKey("web:s1"), "event_id", "e1", "channel", "web")
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tc.mk().With("turn", "t_1", "agent", "default").Info("turn finished", "status", "done", "state", "done",
					"model", "m", "input_tokens", 900, "output_tokens", 20, "cost_usd", 0.0001, "duration_ms", 1)
			}
		})
	}
}
