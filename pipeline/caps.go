package pipeline

import (
	"context"

	"github.com/echogate/echogate"
)

// Streamer posts an answer as it is produced (a native stream, or a message edited in place).
type Streamer interface {
	StartStream(ctx context.Context, out echogate.Outbound) (echogate.Stream, error)
}

// Editor edits a posted message (the plan message).
type Editor interface {
	Edit(ctx context.Context, ref echogate.MessageRef, text string) error
}

// Typer shows that the bot is working until stop is called.
type Typer interface {
	StartTyping(ctx context.Context, conv echogate.ConversationRef, on echogate.MessageRef) (stop func())
}

// TurnObserver receives a turn's events (the web chat's event stream). It must not block.
type TurnObserver interface {
	ObserveTurn(ev echogate.TurnEvent)
}

// ReplyFinder finds a message a turn posted, by the turn's id (the reply id its last message of
// that kind carries): the end of its answer (OutReply) or its approval prompt
// (OutApprovalPrompt). Recovery asks before it posts again what a turn may have posted just
// before a crash. found false means the conversation holds no such message. It blocks on the
// platform's API.
type ReplyFinder interface {
	FindReply(ctx context.Context, conv echogate.ConversationRef, turn string, kind echogate.OutboundKind) (ref echogate.MessageRef, text string, found bool, err error)
}

// ActivityShower shows what a turn is doing (see channels.ActivityShower).
type ActivityShower interface {
	StartActivity(ctx context.Context, conv echogate.ConversationRef, on echogate.MessageRef) echogate.ActivityView
}

// Downloader downloads a chat attachment from the platform that hosts it (channels.Downloader,
// declared here so the pipeline does not import channels).
type Downloader interface {
	Download(ctx context.Context, att echogate.Attachment, maxBytes int64) (data []byte, mime string, err error)
}

// Caps are a Replier's optional capabilities; nil means the replier lacks it. The pipeline
// reads them once per replier (CapsOf), not by type assertion at each use.
type Caps struct {
	Streamer   Streamer
	Editor     Editor
	Typer      Typer
	Observer   TurnObserver
	Finder     ReplyFinder
	Activity   ActivityShower
	Downloader Downloader
}

// CapsProvider is a Replier that states its capabilities itself: a decorator (tracing, …)
// returns the wrapped replier's capabilities, wrapped as it likes, without a type for every
// combination of them.
type CapsProvider interface {
	Caps() Caps
}

// CapsOf returns r's capabilities: r.Caps() when r is a CapsProvider, else those r has by its
// method set.
func CapsOf(r Replier) Caps {
	if cp, ok := r.(CapsProvider); ok {
		return cp.Caps()
	}
	var c Caps
	c.Streamer, _ = r.(Streamer)
	c.Editor, _ = r.(Editor)
	c.Typer, _ = r.(Typer)
	c.Observer, _ = r.(TurnObserver)
	c.Finder, _ = r.(ReplyFinder)
	c.Activity, _ = r.(ActivityShower)
	c.Downloader, _ = r.(Downloader)
	return c
}

// The other dependencies' optional capabilities are read the same way: once, where the
// dependency enters the pipeline (New, a stage's constructor, a profile, a stream's start),
// into a small record whose fields the use sites read. No file but this one asserts a
// capability (TestCapabilitiesAreReadOnlyInCapsFiles); replicas.go reads the store's.

// compactorCaps are a Compactor's optional capabilities (agent/compress has them all); a nil
// field means the Compactor lacks it, a zero record that there is no Compactor.
type compactorCaps struct {
	compactor Compactor
	rebuild   historyRebuilder   // starts a DM's turn from the latest checkpoint (context.go)
	continued continuedRebuilder // … skipping the store when the history cache served it
	scoped    scopedRebuilder    // starts a shared conversation's turn from a scrubbed checkpoint
	scrubbed  scopedCompactor    // compacts a shared conversation through summaryScrub (history_people.go)
	loader    checkpointLoader   // reads a DM's checkpoint alongside its history (context.go)
}

// compactorCapsOf reads c's capabilities (c nil: none).
func compactorCapsOf(c Compactor) compactorCaps {
	if c == nil {
		return compactorCaps{}
	}
	cc := compactorCaps{compactor: c}
	cc.rebuild, _ = c.(historyRebuilder)
	cc.continued, _ = c.(continuedRebuilder)
	cc.scoped, _ = c.(scopedRebuilder)
	cc.scrubbed, _ = c.(scopedCompactor)
	cc.loader, _ = c.(checkpointLoader)
	return cc
}

// budgetCaps is a Budget with its optional capability: reserver is nil when the budget is only
// checked (peruser.go), budget nil when there is no budget.
type budgetCaps struct {
	budget   Budget
	reserver BudgetReserver
}

// budgetCapsOf reads b's capabilities (b nil: no budget).
func budgetCapsOf(b Budget) budgetCaps {
	bc := budgetCaps{budget: b}
	bc.reserver, _ = b.(BudgetReserver)
	return bc
}

// contextSource is a context provider with its optional capabilities: kind is its
// ContextKind ("memory", "knowledge"; "" when it has none and always runs), versioned is set
// for a VersionedContext (its section is frozen per session, prompt.go).
type contextSource struct {
	ContextProvider
	kind      string
	versioned VersionedContext
}

// contextSourcesOf reads the capabilities of the context providers, in their order.
func contextSourcesOf(cps []ContextProvider) []contextSource {
	out := make([]contextSource, 0, len(cps))
	for _, cp := range cps {
		s := contextSource{ContextProvider: cp}
		if k, ok := cp.(ContextKind); ok {
			s.kind = k.ContextKind()
		}
		s.versioned, _ = cp.(VersionedContext)
		out = append(out, s)
	}
	return out
}

// postNotifierOf returns the stream's PostNotifier, nil when it does not report the message
// it posts. A stream enters at StartStream: read it there, once.
func postNotifierOf(s echogate.Stream) echogate.PostNotifier {
	pn, _ := s.(echogate.PostNotifier)
	return pn
}
