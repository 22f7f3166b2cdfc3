package web

import (
	"slices"
	"unsafe"
)

// A session's history is what History (GET /api/chat/history) shows: its latest
// HistoryMessages messages, and of all sessions together about HistoryTotalBytes.

// addHistory appends e to s's history. s.mu must be held; unlockSession then keeps the
// histories within HistoryTotalBytes.
func (c *Channel) addHistory(s *session, e Entry) {
	c.historyBytes.Add(int64(s.addHistory(e, c.cfg.HistoryMessages)))
}

// shedHistories drops the histories of droppable sessions other than keep, least recently
// active first, until the histories hold at most target bytes or none is left to drop. As in
// shedReplays, shedding below the bound keeps the scan off most messages. The caller holds no
// lock.
func (c *Channel) shedHistories(target int64, keep *session) {
	c.shedIdle(func(s *session) bool { return s != keep && s.historyDroppable() }, func(s *session) bool {
		if c.historyBytes.Load() <= target {
			return false
		}
		c.historyBytes.Add(-int64(s.dropHistory()))
		return true
	})
}

// addHistory appends e, dropping the oldest entries past limit, and returns how many bytes
// (entryBytes) the history grew by.
func (s *session) addHistory(e Entry, limit int) int {
	before := s.historyBytes
	if len(s.history) >= limit {
		drop := len(s.history) - limit + 1
		for i := range drop {
			s.historyBytes -= entryBytes(&s.history[i])
		}
		n := copy(s.history, s.history[drop:])
		clear(s.history[n:])
		s.history = s.history[:n]
	}
	s.history = append(s.history, e)
	s.historyBytes += entryBytes(&e)
	return s.historyBytes - before
}

// dropHistory forgets the history and returns the bytes it held.
func (s *session) dropHistory() int {
	n := s.historyBytes
	s.history, s.historyBytes = nil, 0
	return n
}

// historyDroppable reports whether the history may be dropped to stay within
// HistoryTotalBytes: no turn runs or is queued and no stream is attached.
func (s *session) historyDroppable() bool {
	return !s.running && len(s.queued) == 0 && len(s.subs) == 0 && len(s.history) > 0
}

// entryBytes is what an entry costs the history: the struct and its strings.
func entryBytes(e *Entry) int {
	return int(unsafe.Sizeof(*e)) + len(e.ID) + len(e.Role) + len(e.User) + len(e.Text) + len(e.Turn)
}

// removeHistory removes the entry with id and returns the bytes it held (0 when none).
func (s *session) removeHistory(id string) int {
	for i := len(s.history) - 1; i >= 0; i-- {
		if s.history[i].ID == id {
			n := entryBytes(&s.history[i])
			s.history = slices.Delete(s.history, i, i+1)
			s.historyBytes -= n
			return n
		}
	}
	return 0
}
