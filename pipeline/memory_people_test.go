package pipeline_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/agent/agenttest"
	"github.com/echogate/echogate/memory"
	"github.com/echogate/echogate/memory/memorytest"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/pipeline/pipelinetest"
)

// threadMsg is a mention of the bot by user in Slack thread 1.0 of channel C1: one session
// for everyone who replies there.
func threadMsg(user, text string) echogate.InboundEvent {
	ev := slackMsg("C1", user, text)
	ev.Conversation.Thread = "1.0"
	return ev
}

// guildMsg is a mention of the bot by user in Discord guild channel D1: one session for the
// whole channel.
func guildMsg(user, text string) echogate.InboundEvent {
	ev := threadMsg(user, text)
	ev.Conversation = echogate.ConversationRef{Platform: echogate.PlatformDiscord, Workspace: "G1", Channel: "D1"}
	return ev
}

// sharedThread runs a pipeline on store whose memory snapshot comes from a memory service
// over mems, answering on Slack and Discord.
func sharedThread(t *testing.T, store *pipelinetest.MemStore, mems *memorytest.Store) (*harness, *pipelinetest.Replier, *memory.Service) {
	t.Helper()
	mem, err := memory.New(memory.Config{}, mems, nil, nil, memory.Hooks{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slack := pipelinetest.NewReplier(echogate.PlatformSlack)
	h := start(t, opts{store: store, cfg: pipeline.Config{SystemPrompt: "You are the team's helper."}, deps: func(d *pipeline.Deps) {
		withSlack(slack)(d)
		d.Repliers[echogate.PlatformDiscord] = slack
		d.Context = []pipeline.ContextProvider{mem}
	}})
	h.model.SetDefault(agenttest.Reply("ok"))
	return h, slack, mem
}

// remember stores a pinned memory of user through mem (a write this process may or may not
// have seen, depending on the service).
func remember(t *testing.T, mem *memory.Service, user, text string) {
	t.Helper()
	if _, err := mem.Remember(context.Background(), memory.Note{Owner: "user:" + user, Text: text, Pinned: true}); err != nil {
		t.Fatal(err)
	}
}

// turnPrompts submits the events one after the other and returns the system prompt of each
// turn's model request.
func turnPrompts(t *testing.T, h *harness, slack *pipelinetest.Replier, evs ...echogate.InboundEvent) []string {
	t.Helper()
	before := len(h.model.Requests())
	for _, ev := range evs {
		h.submit(ev)
		<-slack.Done
	}
	var out []string
	for _, r := range h.model.Requests()[before:] {
		out = append(out, r.Messages[0].Content)
	}
	if len(out) != len(evs) {
		t.Fatalf("model requests = %d, want %d", len(out), len(evs))
	}
	return out
}

// Finding 1 of issue 36: in a shared thread, each person's request carries their own long-term
// memories, never another participant's, whoever spoke first and however the memories were
// written (by this process, or elsewhere: the CLI, another replica).
func TestSharedThreadMemoryIsPerPerson(t *testing.T) {
	for _, place := range []struct {
		name     string
		platform string
		ev       func(user, text string) echogate.InboundEvent
	}{{"slack thread", "slack", threadMsg}, {"discord channel", "discord", guildMsg}} {
		for _, writer := range []string{"this process", "elsewhere"} {
			t.Run(place.name+", written by "+writer, func(t *testing.T) {
				store := pipelinetest.NewMemStore()
				mems := memorytest.New(store)
				h, rep, mem := sharedThread(t, store, mems)
				w := mem
				if writer == "elsewhere" {
					w, _ = memory.New(memory.Config{}, mems, nil, nil, memory.Hooks{}, nil)
				}
				remember(t, w, place.platform+":UA", "Passport number is X123")
				remember(t, w, place.platform+":UB", "Favourite editor is Helix")

				got := turnPrompts(t, h, rep, place.ev("UA", "what do you know about me?"), place.ev("UB", "and about me?"),
					place.ev("UA", "anything else?"))
				for i, tt := range []struct {
					user, want, not string
				}{{"UA", "X123", "Helix"}, {"UB", "Helix", "X123"}, {"UA", "X123", "Helix"}} {
					if !strings.Contains(got[i], tt.want) || strings.Contains(got[i], tt.not) {
						t.Errorf("turn %d (%s): system prompt = %q, want %s's memory %q and not %q", i+1, tt.user, got[i], tt.user, tt.want, tt.not)
					}
				}
			})
		}
	}
}

// Finding 1 of issue 36, after a restart: the memory versions of a new process start afresh,
// and must still not make one person's frozen snapshot serve another.
func TestMemoryVersionDoesNotCollideAfterRestart(t *testing.T) {
	store := pipelinetest.NewMemStore()
	mems := memorytest.New(store)
	h, slack, mem := sharedThread(t, store, mems)
	remember(t, mem, "slack:UA", "Passport number is X123")
	turnPrompts(t, h, slack, threadMsg("UA", "remember my passport"))
	h.stop()

	h2, slack2, _ := sharedThread(t, store, mems) // a new process on the same store
	got := turnPrompts(t, h2, slack2, threadMsg("UA", "hello again"), threadMsg("UB", "hi, I am new here"))
	if !strings.Contains(got[0], "X123") {
		t.Errorf("UA's system prompt after the restart = %q, want UA's memory X123", got[0])
	}
	if strings.Contains(got[1], "X123") {
		t.Errorf("UB's system prompt after the restart = %q, want no memory of UA's (X123)", got[1])
	}
}

// countingContext counts the renders of a VersionedContext.
type countingContext struct {
	*memory.Service
	renders atomic.Int64
}

func (c *countingContext) ContextSection(ctx context.Context, q echogate.ContextQuery) (string, string, error) {
	c.renders.Add(1)
	return c.Service.ContextSection(ctx, q)
}

// In a shared thread the system prompt stays a cacheable prefix for each person: people taking
// turns do not make each other's snapshot render again, and each person's prompt is the same
// bytes turn after turn.
func TestSharedThreadKeepsEachPersonsPromptPrefix(t *testing.T) {
	mems := memorytest.New(nil)
	mem, err := memory.New(memory.Config{}, mems, nil, nil, memory.Hooks{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	remember(t, mem, "slack:UA", "Passport number is X123")
	remember(t, mem, "slack:UB", "Favourite editor is Helix")
	cc := &countingContext{Service: mem}
	slack := pipelinetest.NewReplier(echogate.PlatformSlack)
	h := start(t, opts{deps: func(d *pipeline.Deps) {
		withSlack(slack)(d)
		d.Context = []pipeline.ContextProvider{cc}
	}})
	h.model.SetDefault(agenttest.Reply("ok"))
	got := turnPrompts(t, h, slack, threadMsg("UA", "one"), threadMsg("UB", "two"), threadMsg("UA", "three"), threadMsg("UB", "four"))
	if got[0] != got[2] || got[1] != got[3] || got[0] == got[1] {
		t.Errorf("system prompts of UA, UB, UA, UB = %q; want UA's twice the same, UB's twice the same, and the two different", got)
	}
	if n := cc.renders.Load(); n != 2 {
		t.Errorf("memory snapshot rendered %d times, want 2 (once per person)", n)
	}
}
