package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/echogate/echogate"
)

// The model request of a turn is ordered for provider prompt caching, which reuses the longest
// prefix a request shares with an earlier one:
//
//	system    the configured system prompt, the platform, the agent's skill catalogue
//	          (skills.go), and the standing context (memory
//	          snapshot) frozen per session and person until it changes (VersionedContext)
//	tools     in a stable order (the registry's, by name)
//	history   the session's earlier messages, as stored
//	note      the current time and the per-turn context sections (knowledge hits for the new
//	          message): a system message just before the new message, never in the prefix
//	new       the user's message
//
// The note is not stored with the transcript, so the next turn's request shares everything up
// to this turn's new message with this one.

// prompt renders the system prompt and the turn's note.
func (s *ContextStage) prompt(ctx context.Context, t *turn, query string) (system, note string) {
	q := echogate.ContextQuery{Session: t.key, UserID: t.userID, Channel: t.channel, Text: query, Budget: contextSectionBudget}
	var sys, per strings.Builder
	sys.WriteString(t.prof.SystemPrompt) // the agent's (profile.go)
	fmt.Fprintf(&sys, "\n\nConversation on %s.", t.ev.Conversation.Platform)
	if cat := s.catalogue(t.prof); cat != "" { // stable bytes: part of the cached prefix (skills.go)
		sys.WriteString("\n\n")
		sys.WriteString(strings.TrimRight(cat, "\n"))
	}
	sys.WriteString(s.standingContext(ctx, t, q))

	now := s.now().UTC()
	fmt.Fprintf(&per, "Current time: %s (UTC).", now.Format("Monday, 2 January 2006, 15:04"))
	for _, cp := range s.providers {
		if cp.versioned != nil || !t.prof.wantsContext(cp) {
			continue
		}
		writeSection(ctx, t, &per, cp, t.prof.contextQuery(cp, q))
	}
	return sys.String(), per.String()
}

// standingContext returns the sections of the VersionedContext providers, frozen per session
// and person (t.userID): rendered again only when a provider's version changed or the frozen
// text is older than snapshotTTL. In a shared session each person's requests keep a stable
// prefix of their own.
func (s *ContextStage) standingContext(ctx context.Context, t *turn, q echogate.ContextQuery) string {
	var version uint64
	var standing []contextSource
	for _, cp := range s.providers {
		if cp.versioned != nil && t.prof.wantsContext(cp) {
			standing = append(standing, cp)
			version = version*1_000_003 + cp.versioned.ContextVersion(t.prof.contextQuery(cp, q)) + 1
		}
	}
	if t.prof.MemoryScope == "user" {
		version ^= 1 << 63 // the agent's scope is part of what the frozen text says
	}
	if len(standing) == 0 {
		return ""
	}
	now := s.now()
	key := snapKey{session: q.Session, user: q.UserID}
	if text, ok := s.snaps.get(key, version, now); ok {
		return text
	}
	var b strings.Builder
	for _, cp := range standing {
		writeSection(ctx, t, &b, cp, t.prof.contextQuery(cp, q))
	}
	s.snaps.put(key, b.String(), version, now)
	return b.String()
}

// writeSection appends one provider's section ("\n\n## title\ntext"); a failure is logged and
// the turn goes on without it.
func writeSection(ctx context.Context, t *turn, b *strings.Builder, cp ContextProvider, q echogate.ContextQuery) {
	title, text, err := cp.ContextSection(ctx, q)
	if err != nil {
		t.log.Warn("context provider failed; continuing without its section", "err", err)
		return
	}
	if strings.TrimSpace(text) == "" {
		return
	}
	fmt.Fprintf(b, "\n\n## %s\n%s", title, text)
}

// insertNote puts the turn's note as a system message before the last n messages (the turn's
// own), in msgs' spare capacity when it has some (msgs is the turn's own slice). An empty note
// leaves msgs as they are.
func insertNote(msgs []echogate.Message, n int, note string) []echogate.Message {
	if note == "" {
		return msgs
	}
	return slices.Insert(msgs, len(msgs)-n, echogate.Message{Role: echogate.RoleSystem, Content: note})
}
