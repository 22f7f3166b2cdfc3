package compress

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/echogate/echogate"
)

// plan is how Compact shortens a conversation: summarize is replaced by a checkpoint, tail is
// kept verbatim after it.
type plan struct {
	summarize []echogate.Message // oldest first; may start with the previous checkpoint pair
	tail      []echogate.Message // verbatim, oldest first; starts with a user message when there is one
	// pinned: the last user message was kept while earlier messages of its own turn were
	// summarized (that turn alone did not fit).
	pinned bool
	// truncated counts tail messages whose content was cut because even the last group did not fit.
	truncated int
}

// checkpointHead returns how many leading messages are a previous checkpoint (the checkpoint
// message and its acknowledgement): 0, 1 or 2.
func checkpointHead(msgs []echogate.Message) int {
	if len(msgs) == 0 || !IsCheckpoint(msgs[0]) {
		return 0
	}
	if len(msgs) > 1 && isAck(msgs[1]) {
		return 2
	}
	return 1
}

// canCut reports whether the conversation may be split before msgs[i]: never before a tool
// result, so an assistant's tool calls and their results stay on one side.
func canCut(msgs []echogate.Message, i int) bool {
	return i >= len(msgs) || msgs[i].Role != echogate.RoleTool
}

// split chooses what to summarize and what to keep so that the kept part is at most budget
// tokens (by est):
//
//  1. the last keepTurns user turns (a user message and everything after it), fewer when they do
//     not fit, down to the current turn alone;
//  2. when the current turn alone is too large: its user message plus the latest of its
//     assistant/tool groups that fit (the earlier groups are summarized);
//  3. when even that is too large: the user message and the last group, with the largest message
//     contents cut to fit.
//
// Cuts are only made before a non-tool message, so tool calls are never separated from their
// results.
func split(msgs []echogate.Message, est func(echogate.Message) int, keepTurns, budget int) plan {
	head := checkpointHead(msgs)
	suffix := make([]int, len(msgs)+1) // suffix[i] = tokens of msgs[i:]
	for i := len(msgs) - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + est(msgs[i])
	}
	var starts []int // user turn starts after the head
	for i := head; i < len(msgs); i++ {
		if msgs[i].Role == echogate.RoleUser {
			starts = append(starts, i)
		}
	}
	// 1. whole user turns.
	for k := min(keepTurns, len(starts)); k >= 1; k-- {
		cut := starts[len(starts)-k]
		if cut <= head {
			continue // nothing older than the previous checkpoint to summarize
		}
		if suffix[cut] <= budget {
			return plan{summarize: msgs[:cut], tail: msgs[cut:]}
		}
	}
	// 2. the current turn's user message plus its latest groups.
	u := -1
	if len(starts) > 0 {
		u = starts[len(starts)-1]
	}
	pinnedCost := 0
	if u >= 0 {
		pinnedCost = est(msgs[u])
	}
	from := max(u+2, head+1) // keep at least one message of the turn out of the tail
	last := -1               // the last cut point before the end: keeps only the final group
	for c := from; c < len(msgs); c++ {
		if !canCut(msgs, c) {
			continue
		}
		last = c
		if pinnedCost+suffix[c] <= budget {
			return withPinned(msgs, u, c, 0)
		}
	}
	// 3. nothing fits: keep the final group (or only the user message) and cut contents.
	c := last
	if c < 0 {
		if u >= 0 {
			c = u + 1 // the whole current turn
		} else {
			c = head // everything after the previous checkpoint
		}
	}
	p := withPinned(msgs, u, c, 0)
	p.tail, p.truncated = truncateToFit(p.tail, est, budget)
	return p
}

// withPinned builds the plan that keeps msgs[u] (when u >= 0) followed by msgs[c:], and
// summarizes the rest.
func withPinned(msgs []echogate.Message, u, c, truncated int) plan {
	if u < 0 || c <= u+1 {
		start := c
		if u >= 0 && u < c {
			start = u
		}
		return plan{summarize: msgs[:start], tail: msgs[start:], truncated: truncated}
	}
	sum := make([]echogate.Message, 0, u+(c-u-1))
	sum = append(sum, msgs[:u]...)
	sum = append(sum, msgs[u+1:c]...)
	tail := make([]echogate.Message, 0, 1+len(msgs)-c)
	tail = append(tail, msgs[u])
	tail = append(tail, msgs[c:]...)
	return plan{summarize: sum, tail: tail, pinned: true, truncated: truncated}
}

// minKeepBytes is the least of a message's content truncation leaves.
const minKeepBytes = 256

// truncateToFit cuts the contents of the largest messages (their middle, with a marker) until
// the messages fit budget or nothing more can be cut. It returns a copy when it changes anything,
// and how many messages it cut.
func truncateToFit(msgs []echogate.Message, est func(echogate.Message) int, budget int) ([]echogate.Message, int) {
	total := 0
	for _, m := range msgs {
		total += est(m)
	}
	if total <= budget {
		return msgs, 0
	}
	out := append([]echogate.Message(nil), msgs...)
	cut := map[int]bool{}
	for range 4 * (len(out) + 1) {
		if total <= budget {
			break
		}
		big, bigCost := -1, 0
		for i, m := range out {
			if len(m.Content) <= minKeepBytes {
				continue
			}
			if c := est(m); c > bigCost {
				big, bigCost = i, c
			}
		}
		if big < 0 {
			break
		}
		excess := total - budget
		keep := max(minKeepBytes, len(out[big].Content)-excess*4-len(truncMarker)-32)
		if keep >= len(out[big].Content) {
			keep = len(out[big].Content) / 2
		}
		before := bigCost
		out[big].Content = truncateMiddle(out[big].Content, keep)
		total += est(out[big]) - before
		cut[big] = true
	}
	return out, len(cut)
}

const truncMarker = "\n[… %d bytes left out by context compression …]\n"

// truncateMiddle shortens s to about max bytes, keeping its beginning (two thirds) and end (one
// third) on UTF-8 boundaries with a marker saying how much was left out.
func truncateMiddle(s string, max int) string {
	if len(s) <= max {
		return s
	}
	headN := max * 2 / 3
	tailN := max - headN
	for headN > 0 && !utf8.RuneStart(s[headN]) {
		headN--
	}
	tailStart := len(s) - tailN
	for tailStart < len(s) && !utf8.RuneStart(s[tailStart]) {
		tailStart++
	}
	var b strings.Builder
	b.Grow(max + len(truncMarker) + 8)
	b.WriteString(s[:headN])
	fmt.Fprintf(&b, truncMarker, tailStart-headN)
	b.WriteString(s[tailStart:])
	return b.String()
}
