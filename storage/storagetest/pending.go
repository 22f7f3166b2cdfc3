// Paused turns' part of Run.

package storagetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

func (r *runner) pending(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	key := u.session("p")
	want := echogate.PendingTurn{
		Session: key, Turn: u.key("t1"), Kind: echogate.PauseApproval, CallID: "call_9", Tool: "run_command",
		State:       []byte(`{"messages":[{"role":"user","content":"rm -rf"}],"bin":"\u0000\u00ff"}`),
		Prompt:      echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: "C1", ID: "1700000000.000200"},
		RequestedBy: "slack:U1", CreatedAt: r.at(time.Second), ExpiresAt: r.at(24 * time.Hour),
	}
	must(t, "SavePending", s.SavePending(ctx, want))
	got, err := s.GetPending(ctx, key)
	must(t, "GetPending", err)
	checkPending(t, "GetPending", got, want)

	// Saving again replaces: one pending turn per session.
	repl := echogate.PendingTurn{Session: key, Turn: u.key("t2"), Kind: echogate.PauseAsk, CallID: "call_10", Tool: "ask_user",
		State: []byte{0, 1, 2, 255}, RequestedBy: "slack:U2", CreatedAt: r.at(2 * time.Second)}
	must(t, "SavePending(replace)", s.SavePending(ctx, repl))
	got, err = s.GetPending(ctx, key)
	must(t, "GetPending", err)
	checkPending(t, "GetPending after replace", got, repl)

	if byPrompt, err := s.PendingByPrompt(ctx, want.Prompt); err == nil {
		t.Errorf("PendingByPrompt(replaced prompt) = %+v, want ErrNotFound", byPrompt)
	}
	repl.Prompt = echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: "C1", ID: "1700000000.000300"}
	must(t, "SavePending(with prompt)", s.SavePending(ctx, repl))
	got, err = s.PendingByPrompt(ctx, repl.Prompt)
	must(t, "PendingByPrompt", err)
	checkPending(t, "PendingByPrompt", got, repl)
	_, err = s.PendingByPrompt(ctx, echogate.MessageRef{Platform: echogate.PlatformSlack, Channel: "C2", ID: repl.Prompt.ID})
	checkNotFound(t, "PendingByPrompt(same id, other channel)", err)

	must(t, "DeletePending", s.DeletePending(ctx, key))
	_, err = s.GetPending(ctx, key)
	checkNotFound(t, "GetPending after delete", err)
	checkNotFound(t, "DeletePending twice", s.DeletePending(ctx, key))
}

func (r *runner) listPending(t *testing.T, s Store, u uniq) {
	ctx := t.Context()
	var keys []echogate.SessionKey
	for i, off := range []time.Duration{3, 1, 2} {
		k := u.session(fmt.Sprintf("p%d", i))
		keys = append(keys, k)
		must(t, "SavePending", s.SavePending(ctx, echogate.PendingTurn{Session: k, Turn: "t", Kind: echogate.PauseAsk, CreatedAt: r.at(off * time.Second)}))
	}
	all, err := s.ListPending(ctx, 0)
	must(t, "ListPending", err)
	var got []echogate.SessionKey
	for i, p := range all {
		if i > 0 && p.CreatedAt.Before(all[i-1].CreatedAt) {
			t.Errorf("ListPending()[%d].CreatedAt = %v before [%d] %v, want oldest first", i, p.CreatedAt, i-1, all[i-1].CreatedAt)
		}
		if u.mine(string(p.Session)) {
			got = append(got, p.Session)
		}
	}
	if want := []echogate.SessionKey{keys[1], keys[2], keys[0]}; !slices.Equal(got, want) {
		t.Errorf("ListPending(0) ours = %q, want %q", got, want)
	}
	limited, err := s.ListPending(ctx, 2)
	must(t, "ListPending(2)", err)
	if len(limited) != 2 {
		t.Errorf("ListPending(2) returned %d, want 2", len(limited))
	}
}
