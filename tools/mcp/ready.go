package mcp

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// NotReadyError lists the servers that were not connected when Ready gave up or settled.
type NotReadyError struct {
	// Late are servers still making their first connection attempt when ctx ended.
	Late []string
	// Failed maps servers whose attempts so far failed to the last error (they keep being
	// retried in the background).
	Failed map[string]string
}

func (e *NotReadyError) Error() string {
	var parts []string
	for _, n := range e.Late {
		parts = append(parts, n+" (still connecting)")
	}
	for _, n := range sortedKeys(e.Failed) {
		parts = append(parts, n+" ("+e.Failed[n]+")")
	}
	return "mcp: not connected: " + strings.Join(parts, "; ")
}

// Ready blocks until every server has settled — connected, or failed at least one connection
// attempt — or ctx ends, whichever is first. It returns nil when every server is connected with
// its tools registered, else a *NotReadyError naming each server that is not and why. Servers
// that are not ready keep being retried by Run; Ready never stops them. It needs Run to be
// running (before Run no server settles) and is safe for concurrent use.
func (m *Manager) Ready(ctx context.Context) error {
	for {
		updated := m.Updated()
		late, failed := m.unsettled()
		if len(late) == 0 {
			if len(failed) == 0 {
				return nil
			}
			return &NotReadyError{Failed: failed}
		}
		select {
		case <-ctx.Done():
			return &NotReadyError{Late: late, Failed: failed}
		case <-updated:
		}
	}
}

// unsettled returns the servers still on their first attempt, and those not connected with why.
func (m *Manager) unsettled() (late []string, failed map[string]string) {
	for _, st := range m.Status() {
		switch {
		case st.Connected:
		case st.Attempts == 0:
			late = append(late, st.Name)
		default:
			if failed == nil {
				failed = map[string]string{}
			}
			failed[st.Name] = fmt.Sprintf("%s, %d attempts", capText(st.LastError, 200), st.Attempts)
		}
	}
	return late, failed
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
