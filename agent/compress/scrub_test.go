package compress

import (
	"context"
	"strings"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
)

// Finding 1 of issue 36 (compaction summaries): CompactScrubbed's summarizer sees the summarized
// messages only through scrub, the checkpoint copies no scrubbed tool result verbatim, and the
// kept messages and the checkpoint's lineage are those of the messages as given.
func TestCompactScrubbedSummarizesOnlyWhatScrubShows(t *testing.T) {
	const placeholder = "[result of recall for another participant omitted]"
	scrub := func(m echogate.Message) (echogate.Message, bool) {
		switch {
		case m.Role == echogate.RoleSystem:
			return m, false
		case m.Role == echogate.RoleTool && m.Name == "recall":
			m.Content = placeholder
		case len(m.ToolCalls) > 0:
			m.ToolCalls = append([]echogate.ToolCall(nil), m.ToolCalls...)
			for i := range m.ToolCalls {
				if m.ToolCalls[i].Name == "recall" {
					m.ToolCalls[i].Arguments = "{}"
				}
			}
		}
		return m, true
	}
	conv := []echogate.Message{user("what is my passport number, and the time?"),
		{Role: echogate.RoleAssistant, ToolCalls: []echogate.ToolCall{{ID: "r1", Name: "recall", Arguments: `{"query":"passport X123"}`},
			{ID: "c1", Name: "current_time", Arguments: "{}"}}},
		result("r1", "recall", "Passport number is X123"), result("c1", "current_time", "It is 12:00 in Lyon"),
		{Role: echogate.RoleSystem, Content: "Current time: noon. Relevant to UA: passport X123"},
		assistant("It is on file.")}
	conv = append(conv, conversation(12)...)
	for _, scrubbed := range []bool{false, true} {
		c, model, store := newTestCompressor(t, Config{KeepToolResults: 2}, agenttest.Reply(summaryText))
		msgs := startTurn(c, stored(testSession, conv), user("and tomorrow?"))
		var out []echogate.Message
		var changed bool
		var err error
		if scrubbed {
			out, changed, err = c.CompactScrubbed(context.Background(), testSession, msgs, nil, scrub)
		} else {
			out, changed, err = c.CompactScrubbed(context.Background(), testSession, msgs, nil, nil)
		}
		if err != nil || !changed || model.Calls() != 1 {
			t.Fatalf("CompactScrubbed(scrub: %v) = %v, %v with %d summaries; want changed, nil, 1", scrubbed, changed, err, model.Calls())
		}
		tr := model.Requests()[0].Messages[1].Content
		cp := out[0].Content
		for _, c := range []struct {
			where, text, s string
			want           bool
		}{
			{"transcript", tr, "X123", !scrubbed},
			{"transcript", tr, placeholder, scrubbed},
			{"transcript", tr, "Relevant to UA", !scrubbed},
			{"transcript", tr, "It is 12:00 in Lyon", true},
			{"checkpoint", cp, "X123", !scrubbed},
			{"checkpoint", cp, placeholder, false},
			{"checkpoint", cp, "### current_time (call c1)\nIt is 12:00 in Lyon", true},
		} {
			if got := strings.Contains(c.text, c.s); got != c.want {
				t.Errorf("scrub %v: %s contains %q = %v, want %v:\n%.800s", scrubbed, c.where, c.s, got, c.want, c.text)
			}
		}
		if got := scopedCheckpoint(out[0]); got != scrubbed {
			t.Errorf("scrub %v: scopedCheckpoint(checkpoint) = %v, want %v", scrubbed, got, scrubbed)
		}
		kept := out[2:]
		for i, m := range kept {
			if want := msgs[len(msgs)-len(kept)+i]; m.Content != want.Content || m.Role != want.Role {
				t.Errorf("scrub %v: kept message %d = %.30q, want %.30q verbatim", scrubbed, i, m.Content, want.Content)
			}
		}
		// The lineage counts the summarized messages as given, scrubbed or not.
		saved := store.all()
		want := int64(len(conv) - (len(kept) - 1)) // the kept messages: the last turns and the new one
		if len(saved) != 1 || saved[0].Seq != want {
			t.Errorf("scrub %v: saved checkpoints = %+v, want 1 covering seq %d", scrubbed, saved, want)
		}
	}
}

// RebuildScoped starts only from a checkpoint written through a scrub; another one is ignored
// and the next compaction, counting from the start of the loaded history, replaces it.
func TestRebuildScopedIgnoresUnscopedCheckpoints(t *testing.T) {
	keep := func(m echogate.Message) (echogate.Message, bool) { return m, true }
	for _, scoped := range []bool{false, true} {
		c, _, store := newTestCompressor(t, Config{}, agenttest.Reply(summaryText), agenttest.Reply(summaryText))
		hist, next := longTurn()
		msgs := startTurn(c, hist, next)
		var err error
		if scoped {
			_, _, err = c.CompactScrubbed(context.Background(), testSession, msgs, nil, keep)
		} else {
			_, _, err = c.Compact(context.Background(), testSession, msgs, nil)
		}
		if err != nil || len(store.all()) != 1 {
			t.Fatalf("scoped %v: first compaction = %v, %d checkpoints; want nil, 1", scoped, err, len(store.all()))
		}
		first := store.all()[0]
		all := stored(testSession, append(conversation(13), next, assistant("answer 13")))
		head, rest := c.RebuildScoped(context.Background(), testSession, all, false)
		if got := len(head) == 2 && head[0].Content == first.Message.Content; got != scoped {
			t.Fatalf("scoped %v: RebuildScoped starts from the checkpoint = %v, want %v", scoped, got, scoped)
		}
		if !scoped && len(rest) != len(all) {
			t.Fatalf("RebuildScoped past an unscoped checkpoint = %d messages, want the whole history (%d)", len(rest), len(all))
		}
		if scoped {
			continue
		}
		// The plain history, compacted through a scrub: the new checkpoint is scoped and covers
		// what it summarized, counted from the start of the history.
		msgs = append(messagesOf(rest), user(words("question 14", 240)))
		out, changed, err := c.CompactScrubbed(context.Background(), testSession, msgs, nil, keep)
		if err != nil || !changed {
			t.Fatalf("second compaction = %v, %v; want changed, nil", changed, err)
		}
		saved := store.all()
		want := int64(len(all) - (len(out) - 3)) // the kept messages but the new one are stored
		if len(saved) != 2 || saved[1].Seq != want || !scopedCheckpoint(saved[1].Message) {
			t.Errorf("checkpoints after the second compaction = %+v, want a second, scoped one covering seq %d", saved, want)
		}
	}
}
