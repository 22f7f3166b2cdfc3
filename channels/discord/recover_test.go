package discord

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// A panic on a send, stream or edit path (here: a session torn away under the channel) is an
// error for that call and an OnPanic report; a panic in a background task is reported and the
// task's goroutine ends; the process lives either way.
func TestPanicsBecomeErrors(t *testing.T) {
	var panics atomic.Int32
	var paths []string
	ch, err := New(Config{Token: "t", OnPanic: func(p string) { panics.Add(1); paths = append(paths, p) }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch.sess = nil // every REST call dereferences it
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ref := echogate.MessageRef{Platform: echogate.PlatformDiscord, Channel: "2", ID: "3"}
	conv := echogate.ConversationRef{Platform: echogate.PlatformDiscord, Channel: "2"}
	for name, call := range map[string]func() error{
		"send": func() error {
			_, err := ch.Send(ctx, echogate.Outbound{Conversation: conv, Text: "hi"})
			return err
		},
		"edit":    func() error { return ch.Edit(ctx, ref, "x") },
		"react":   func() error { return ch.React(ctx, ref, echogate.ReactionApprove) },
		"unreact": func() error { return ch.Unreact(ctx, ref, echogate.ReactionApprove) },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "recovered panic") {
			t.Errorf("%s with a broken session = %v, want an error naming the recovered panic", name, err)
		}
	}
	done := make(chan struct{})
	if !ch.spawn(func() { defer close(done); var m map[string]int; m["x"]++ }) {
		t.Fatal("spawn refused")
	}
	<-done
	ch.wg.Wait()
	if got := panics.Load(); got != 5 {
		t.Errorf("OnPanic reports = %d (%v), want 5", got, paths)
	}
}
