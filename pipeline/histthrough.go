package pipeline

import "github.com/echogate/echogate"

// The history cache is written through when this process is the only one writing transcripts
// (a store without a SessionLocker: SQLite, one gateway process). A turn that ended done, with
// its end written, adds its own entries to the cached transcript it started from, numbered
// after it as the store numbers them (AppendMessages: one more than the last entry), and marks
// the entry complete; the session's next turn then continues it without asking the store for
// what came after it (HistorySince), which was the one store read every turn made. Every other
// end (stopped, failed, paused, resumed, replayed, an unwritten end) and every replay drops
// the entry instead, so the next turn reads the transcript whole: an entry is complete only
// when nothing else can have been appended after it.

// noteHistory records the newest transcript entry the turn's context was built on (hist, as
// the history cache or the store gave it); own is true when entries of the turn itself were
// visible already, in which case the turn cannot be written through.
func (t *Turn) noteHistory(hist []echogate.StoredMessage, own bool) {
	if len(hist) == 0 || own {
		return
	}
	t.histLast, t.histBase = hist[len(hist)-1], true
}

// writeThrough adds the entries the ending turn wrote to the transcript to the history cache,
// or drops the session's entry (see above). folded is the input written with the end (the
// rest of the input was appended at the start); ok tells whether the end was written.
func (s *ResponseStage) writeThrough(t *Turn, end echogate.TurnEnd, folded []echogate.Message, ok bool) {
	if !s.soleWriter {
		return // the entries are checked against the store at every turn (HistorySince)
	}
	key := t.key
	cur := s.hist.get(key)
	if !ok || !t.histBase || t.resume != nil || t.inputSaved || t.approved != nil || end.Turn.Status != echogate.TurnDoneSt ||
		len(cur) == 0 || cur[len(cur)-1].Seq != t.histLast.Seq || cur[len(cur)-1].Turn != t.histLast.Turn {
		s.hist.drop(key)
		return
	}
	msgs := end.Messages
	if len(folded) == 0 {
		msgs = append(append(make([]echogate.Message, 0, len(t.input)+len(msgs)), t.input...), msgs...)
	}
	if len(msgs) == 0 {
		s.hist.drop(key) // nothing to anchor a complete entry on
		return
	}
	seq := t.histLast.Seq
	entries := make([]echogate.StoredMessage, len(msgs))
	for i, m := range msgs {
		seq++
		entries[i] = echogate.StoredMessage{Session: key, Seq: seq, Turn: t.id, Message: m, At: end.At}
	}
	s.hist.extend(key, cur, entries, true)
}
