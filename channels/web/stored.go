package web

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/echogate/echogate"
)

// maxStoredResult bounds a tool result shown in a history rebuilt from the store.
const maxStoredResult = 4000

// Stored is what the store holds of a session (Config.Stored): its transcript, oldest first,
// and its pending approval (secrets masked by the caller).
type Stored struct {
	Messages []echogate.StoredMessage
	Pending  []Pending
}

// storedHistory is GET /api/chat/history's answer: the channel's snapshot of the session,
// completed from the store. The store holds every turn, also those of before a restart or of a
// session the channel forgot; the channel holds what the store does not: notices, the prompts
// it posted, and the messages of a turn not stored yet. A store that fails leaves the
// channel's snapshot as it is (the failure is logged).
func (c *Channel) storedHistory(ctx context.Context, id string) Snapshot {
	snap, _ := c.History(id)
	if c.cfg.Stored == nil {
		return snap
	}
	st, err := c.cfg.Stored(ctx, id, c.cfg.HistoryMessages)
	if err != nil {
		c.log.Warn("web: read the stored history of a session; showing the channel's own", "session", id, "err", err)
		return snap
	}
	return mergeStored(snap, st, c.cfg.HistoryMessages)
}

// mergeStored completes snap with st: the stored user, assistant and tool messages, then the
// channel's entries the store does not hold (every other role, and user or assistant messages
// newer than the last stored message: a turn still running), in time order, at most limit.
// Stored pending approvals the channel does not know are added; those it knows learn who asked.
func mergeStored(snap Snapshot, st Stored, limit int) Snapshot {
	entries := storedEntries(st.Messages)
	var last time.Time
	if n := len(st.Messages); n > 0 {
		last = st.Messages[n-1].At
	}
	for _, e := range snap.Messages {
		if (e.Role == "user" || e.Role == "assistant") && !e.At.After(last) {
			continue // stored: shown from the store
		}
		entries = append(entries, e)
	}
	slices.SortStableFunc(entries, func(a, b Entry) int { return a.At.Compare(b.At) })
	if limit > 0 && len(entries) > limit {
		entries = entries[len(entries)-limit:]
	}
	snap.Messages = entries
	for _, p := range st.Pending {
		i := slices.IndexFunc(snap.Pending, func(q Pending) bool { return q.CallID == p.CallID })
		if i < 0 {
			snap.Pending = append(snap.Pending, p)
		} else if snap.Pending[i].RequestedBy == "" {
			snap.Pending[i].RequestedBy = p.RequestedBy
		}
	}
	return snap
}

// storedEntries renders a stored transcript as history entries: a user message, an assistant
// message's text, and one tool row per call holding the call's result once it follows.
// System messages (summaries) are left out.
func storedEntries(msgs []echogate.StoredMessage) []Entry {
	out := make([]Entry, 0, len(msgs))
	calls := map[string]int{} // call id → index of its row in out
	for _, m := range msgs {
		id := "s" + strconv.FormatInt(m.Seq, 10)
		switch m.Message.Role {
		case echogate.RoleUser:
			out = append(out, Entry{ID: id, Role: "user", Text: m.Message.Content, Turn: m.Turn, At: m.At})
		case echogate.RoleAssistant:
			if m.Message.Content != "" {
				out = append(out, Entry{ID: id, Role: "assistant", Text: m.Message.Content, Turn: m.Turn, At: m.At})
			}
			for i, tc := range m.Message.ToolCalls {
				calls[tc.ID] = len(out)
				out = append(out, Entry{ID: id + "." + strconv.Itoa(i), Role: "tool", Turn: m.Turn, At: m.At,
					CallID: tc.ID, Tool: tc.Name, Args: tc.Arguments})
			}
		case echogate.RoleTool:
			res := capString(cmp.Or(m.Message.Content, "(no output)"), maxStoredResult)
			if i, ok := calls[m.Message.ToolCallID]; ok {
				out[i].Result, out[i].IsError = res, m.Message.IsError
				continue
			}
			out = append(out, Entry{ID: id, Role: "tool", Turn: m.Turn, At: m.At, CallID: m.Message.ToolCallID,
				Tool: m.Message.Name, Result: res, IsError: m.Message.IsError})
		}
	}
	return out
}

// capString cuts s at max bytes without splitting a UTF-8 sequence, marking the cut.
func capString(s string, max int) string {
	if len(s) <= max {
		return s
	}
	c := max
	for c > 0 && (s[c]&0xC0) == 0x80 {
		c--
	}
	return s[:c] + "…"
}
