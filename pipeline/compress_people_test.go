package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/agent/compress"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
	"github.com/echogate/echogate/tools"
)

// Finding 1 of issue 36 (compaction summaries): in a conversation several people share, the
// checkpoint that compression writes near the context window is replayed to everyone, so it is
// conversation-level only: the summarizer is fed no per-person tool call's arguments or result
// (whoever made it), the checkpoint copies none of them verbatim, and the messages kept after it
// are replayed to each person like the history (another person's results withheld); nor is the
// summarizer fed the turn's note (per-turn context of its requester). In a direct message, one
// person's, nothing changes: the summarizer sees the tool results and the note.
func TestCompactionSummaryKeepsPersonalResultsPrivate(t *testing.T) {
	const secret = "X123"
	type turn struct {
		user   string
		recall bool // the turn calls recall, which returns the user's passport number
	}
	fill := func(user string, n int) []turn {
		out := make([]turn, n)
		for i := range out {
			out[i] = turn{user: user}
		}
		return out
	}
	dm := func(user, text string) echogate.InboundEvent { return msg("dm-UA", user, text) }
	tests := []struct {
		name   string
		ev     func(user, text string) echogate.InboundEvent
		turns  []turn // until compression has run
		reader string // the next turn's requester
		shared bool   // a shared conversation: the secret reaches neither the summarizer nor the reader
	}{
		{"Slack thread, summary in UA's turn, read by UB", threadMsg,
			append([]turn{{"UA", true}}, fill("UA", 10)...), "UB", true},
		{"Discord channel, summary in UB's turn, read by UA", guildMsg,
			append(append([]turn{{"UB", true}}, fill("UA", 1)...), fill("UB", 10)...), "UA", true},
		{"Slack thread, the result in the kept turns, read by UB", threadMsg,
			append(fill("UA", 10), turn{"UA", true}), "UB", true},
		{"direct message: one person, nothing withheld", dm,
			append([]turn{{"UA", true}}, fill("UA", 10)...), "UA", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkpoints := &memCheckpoints{}
			summarizer := agenttest.NewScriptedModel()
			summarizer.SetDefault(agenttest.Step{Text: "## Goal\nChat.\n## Constraints\nnone\n## Key facts\nnone\n## Tool results\nnone\n## Open items\nnone",
				Usage: echogate.Usage{InputTokens: 700, OutputTokens: 30}})
			recall := newTool("recall", tools.Safe, "- Passport number is "+secret+" (note, pinned)")
			rep := pipelinetest.NewReplier(echogate.PlatformSlack)
			var steps []agenttest.Step
			for i, tn := range tt.turns {
				if tn.recall {
					steps = append(steps, agenttest.CallTool("recall", `{"query":"passport `+secret+`"}`), agenttest.Reply("It is on file."))
					continue
				}
				steps = append(steps, agenttest.Reply(pad(fmt.Sprintf("answer %d:", i), 480)))
			}
			h := start(t, opts{cfg: pipeline.Config{Model: "chat-model", HistoryMessages: 80}, tools: []tools.Tool{recall},
				deps: func(d *pipeline.Deps) {
					for _, p := range []string{echogate.PlatformSlack, echogate.PlatformDiscord, echogate.PlatformWeb} {
						d.Repliers[p] = rep
					}
					c, err := compress.New(compress.Config{ContextWindows: map[string]int{"chat-model": 2000}, ChatModel: "chat-model",
						Model: "summarizer", KeepTurns: 1, SummaryMaxTokens: 150}, summarizer, checkpoints, nil)
					if err != nil {
						t.Fatalf("compress.New: %v", err)
					}
					d.Compactor = c
				}}, steps...)
			h.model.SetDefault(agenttest.Reply("Nothing new."))
			for i, tn := range tt.turns {
				text := pad(fmt.Sprintf("question %d:", i), 480)
				if tn.recall {
					text = "what is my passport number?"
				}
				h.submit(tt.ev(tn.user, text))
				<-rep.Done
			}
			if summarizer.Calls() == 0 || len(checkpoints.all()) == 0 {
				t.Fatalf("summaries = %d, checkpoints = %d before the reader's turn; want compression to have run", summarizer.Calls(), len(checkpoints.all()))
			}
			before := len(h.model.Requests())
			h.submit(tt.ev(tt.reader, "anything new?"))
			<-rep.Done
			reqs := h.model.Requests()
			if len(reqs) != before+1 {
				t.Fatalf("reader's turn made %d model requests, want 1", len(reqs)-before)
			}
			read := reqs[before]
			if len(read.Messages) < 2 || !compress.IsCheckpoint(read.Messages[1]) {
				t.Fatalf("reader's request starts with %.60q, want the stored checkpoint", read.Messages[1].Content)
			}
			checkPairs(t, "reader's request", read.Messages)

			var fed strings.Builder
			for _, r := range summarizer.Requests() {
				fed.WriteString(requestText(r))
			}
			var saved strings.Builder
			for _, cp := range checkpoints.all() {
				saved.WriteString(cp.Message.Content)
			}
			got := map[string]bool{
				"summarizer input":   strings.Contains(fed.String(), secret),
				"stored checkpoints": strings.Contains(saved.String(), secret),
				"reader's request":   strings.Contains(requestText(read), secret),
			}
			// The turn's note (time, per-turn context of its requester) is summarized in a DM only.
			if has := strings.Contains(fed.String(), "Current time:"); has == tt.shared {
				t.Errorf("summarizer input contains the turn's note = %v, want %v", has, !tt.shared)
			}
			for where, has := range got {
				if has == tt.shared {
					t.Errorf("%s contains %q = %v, want %v (shared conversation: %v)", where, secret, has, !tt.shared, tt.shared)
				}
			}
			if tt.shared && !strings.Contains(fed.String(), "[result of recall for another participant omitted]") &&
				!strings.Contains(requestText(read), "[result of recall for another participant omitted]") {
				t.Errorf("neither the summarizer input nor the reader's request has the recall placeholder; want the call answered by it")
			}
		})
	}
}

// plainCompactor is a Compactor without CompactScrubbed: it records the sessions it was run for
// and changes nothing.
type plainCompactor struct {
	mu       sync.Mutex
	sessions []echogate.SessionKey
}

func (c *plainCompactor) Compact(ctx context.Context, session echogate.SessionKey, msgs []echogate.Message, report func(echogate.Usage)) ([]echogate.Message, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions = append(c.sessions, session)
	return msgs, false, nil
}

// A Compactor that cannot withhold per-person tool results from its summary is run in direct
// messages only: in a shared conversation its summary could carry one person's results to others.
func TestCompactionWithoutScrubbingIsNotRunInSharedConversations(t *testing.T) {
	comp := &plainCompactor{}
	rep := pipelinetest.NewReplier(echogate.PlatformSlack)
	h := start(t, opts{deps: func(d *pipeline.Deps) {
		for _, p := range []string{echogate.PlatformSlack, echogate.PlatformDiscord, echogate.PlatformWeb} {
			d.Repliers[p] = rep
		}
		d.Compactor = comp
	}})
	h.model.SetDefault(agenttest.Reply("ok"))
	for _, ev := range []echogate.InboundEvent{threadMsg("UA", "hi"), guildMsg("UB", "hi"), msg("dm-UA", "UA", "hi")} {
		h.submit(ev)
		<-rep.Done
	}
	comp.mu.Lock()
	defer comp.mu.Unlock()
	if got := fmt.Sprint(comp.sessions); got != "[web:dm-UA]" {
		t.Errorf("plain Compactor ran for sessions %s, want [web:dm-UA] (the direct message only)", got)
	}
}

// A checkpoint written without the scrub (by an older version, or while compression ran
// unscoped) may hold one person's tool results: a shared conversation does not replay it but
// starts from its (scoped) history; a direct message still starts from it.
func TestUnscopedCheckpointIsNotReplayedToOthers(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ev      func(user, text string) echogate.InboundEvent
		session echogate.SessionKey
		reader  string
		shared  bool
	}{
		{"Slack thread", threadMsg, "slack:C1:1.0", "UB", true},
		{"direct message", func(user, text string) echogate.InboundEvent { return msg("dm-UA", user, text) }, "web:dm-UA", "UA", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := pipelinetest.NewMemStore()
			rep := pipelinetest.NewReplier(echogate.PlatformSlack)
			repliers := func(d *pipeline.Deps) {
				for _, p := range []string{echogate.PlatformSlack, echogate.PlatformDiscord, echogate.PlatformWeb} {
					d.Repliers[p] = rep
				}
			}
			recall := newTool("recall", tools.Safe, "- Passport number is X123 (note, pinned)")
			h := start(t, opts{store: store, tools: []tools.Tool{recall}, deps: repliers},
				agenttest.CallTool("recall", `{"query":"passport"}`), agenttest.Reply("It is on file."), agenttest.Reply("Fine."))
			for _, text := range []string{"what is my passport number?", "and the weather?"} {
				h.submit(tt.ev("UA", text))
				<-rep.Done
			}
			h.stop()
			hist, err := store.History(context.Background(), tt.session, 0)
			if err != nil || len(hist) < 6 {
				t.Fatalf("History(%s) = %d messages, %v; want the two turns", tt.session, len(hist), err)
			}
			// The checkpoint an unscoped compaction of the first turn would have written.
			old := echogate.Message{Role: echogate.RoleUser, Content: compress.CheckpointTitle + "\n\nThe conversation before the following messages was condensed.\n\n" +
				"## Key facts\nUA asked for the passport number.\n\n## Latest tool results (verbatim)\n\n### recall (call c1)\n- Passport number is X123 (note, pinned)\n"}
			checkpoints := &memCheckpoints{saved: []echogate.StoredMessage{{Session: tt.session, Seq: hist[3].Seq, Message: old}}}
			h = start(t, opts{store: store, tools: []tools.Tool{recall}, cfg: pipeline.Config{Model: "chat-model"}, deps: func(d *pipeline.Deps) {
				repliers(d)
				c, err := compress.New(compress.Config{ChatModel: "chat-model"}, agenttest.NewScriptedModel(), checkpoints, nil)
				if err != nil {
					t.Fatalf("compress.New: %v", err)
				}
				d.Compactor = c
			}}, agenttest.Reply("Nothing new."))
			h.submit(tt.ev(tt.reader, "anything new?"))
			<-rep.Done
			reqs := h.model.Requests()
			if len(reqs) != 1 {
				t.Fatalf("reader's turn made %d model requests, want 1", len(reqs))
			}
			got := requestText(reqs[0])
			fromCheckpoint := compress.IsCheckpoint(reqs[0].Messages[1])
			if strings.Contains(got, "X123") == tt.shared || fromCheckpoint == tt.shared {
				t.Errorf("reader's request contains X123 = %v, starts from the checkpoint = %v; want %v, %v:\n%s",
					strings.Contains(got, "X123"), fromCheckpoint, !tt.shared, !tt.shared, got)
			}
			if tt.shared && (!strings.Contains(got, "what is my passport number?") || !strings.Contains(got, "[result of recall for another participant omitted]")) {
				t.Errorf("reader's request = %q; want the whole history, UA's recall withheld", got)
			}
			checkPairs(t, "reader's request", reqs[0].Messages)
		})
	}
}
