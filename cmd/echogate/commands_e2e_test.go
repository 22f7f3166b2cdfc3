package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Every command ends its exchange: `echogate chat -m /usage` prints the answer and exits, and
// POST /api/chat with /usage ends its stream with done, instead of waiting for a turn that never
// comes.
func TestCommandsEndTheirExchange(t *testing.T) {
	for _, text := range []string{"/usage", "/help", "/model", "/new"} {
		e, out, errb := testEnv(map[string]string{"ECHOGATE_DATA_DIR": t.TempDir()}, "chat", "-m", text)
		done := make(chan int, 1)
		go func() { done <- run(context.Background(), e) }()
		select {
		case code := <-done:
			if code != 0 || strings.TrimSpace(out.String()) == "" {
				t.Errorf("chat -m %s = exit %d, output %q, want exit 0 with the answer (%s)", text, code, out.String(), errb.String())
			}
		case <-time.After(30 * time.Second): // a bound for a hang, not a measurement
			t.Fatalf("chat -m %s did not end: the command left the exchange open", text)
		}
	}

	base, _, stop := startServe(t, map[string]string{})
	defer stop()
	for _, text := range []string{"/usage", "/help"} {
		evs := postChat(t, base, "cmd-"+strings.TrimPrefix(text, "/"), text)
		if len(evs) == 0 || evs[len(evs)-1].Event != "done" || evs[len(evs)-1].Data["status"] != "done" {
			t.Errorf("POST /api/chat %s events = %+v, want a stream ending with done", text, evs)
		}
	}
}
