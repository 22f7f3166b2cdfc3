package storagetest

import (
	"crypto/rand"
	"encoding/hex"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate"
)

// Run runs the conformance suite against the stores open returns. open is called once per
// subtest and must return a store that is open and migrated; it may return a fresh database
// each time or the same shared one (PostgreSQL): every subtest uses keys unique to this run and
// checks listings only for its own records, so subtests are independent. open registers any
// cleanup with t.Cleanup.
//
// Besides pipeline.Store's documented contract, Run pins:
//   - times come back in UTC, equal to what was stored up to at least millisecond precision
//     (exactly, for times with millisecond precision); zero EndedAt/ExpiresAt round-trip as zero;
//   - limit <= 0 lists everything;
//   - Get*, Update*, Delete* and CompleteEvent of an unknown record wrap echogate.ErrNotFound;
//     History, Grants, List* and SumUsage of nothing are empty, not errors;
//   - CreateTurn of an existing id fails; UpdateTurn keeps session, event key, user and start;
//     a store with StartTurn (SQLite's queued insert) reports to done once what CreateTurn would;
//   - BeginTurn writes the record and the input once, whatever its order (beginturn.go);
//   - UpsertSession keeps the first conversation, user, ephemeral flag and CreatedAt and never
//     moves UpdatedAt back;
//   - DeleteSession keeps turns and the usage ledger;
//   - Grants are sorted by tool name; ListUsage is newest first; ListPending oldest first;
//   - empty keys and ids are rejected;
//   - every method fails with an error wrapping ctx.Err() once ctx is cancelled.
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	r := &runner{run: randomHex(t, 6), open: open, base: randomBase(t)}
	tests := []struct {
		name string
		fn   func(t *testing.T, s Store, u uniq)
	}{
		{"ClaimEventOnce", r.claimEventOnce},
		{"ClaimEventConcurrent", r.claimEventConcurrent},
		{"CompleteEvent", r.completeEvent},
		{"UnfinishedEvents", r.unfinishedEvents},
		{"SessionUpsertGet", r.sessionUpsertGet},
		{"ListSessions", r.listSessions},
		{"DeleteSession", r.deleteSession},
		{"AppendAndHistory", r.appendAndHistory},
		{"HistoryLimit", r.historyLimit},
		{"HistorySince", r.historySince},
		{"FinishTurn", r.finishTurn},
		{"RecordProgress", r.recordProgress},
		{"ResumeTurn", r.resumeTurn},
		{"ResumeTurnRace", r.resumeTurnRace},
		{"ResumeTurnOfRunningRecord", r.resumeTurnOfRunningRecord},
		{"ReopenEvent", r.reopenEvent},
		{"RecordToolRun", r.recordToolRun},
		{"RecordPosting", r.recordPosting},
		{"ResumeFollowsSession", r.resumeFollowsSession},
		{"MessageRoundTrip", r.messageRoundTrip},
		{"ConcurrentAppendDifferentSessions", r.concurrentAppendDifferentSessions},
		{"ConcurrentAppendSameSession", r.concurrentAppendSameSession},
		{"Grants", r.grants},
		{"GrantsPerUser", r.grantsPerUser},
		{"Turns", r.turns},
		{"StartTurn", r.startTurn},
		{"BeginTurn", r.beginTurn},
		{"BeginWithInput", r.beginWithInput},
		{"ListTurns", r.listTurns},
		{"UsageRecordList", r.usageRecordList},
		{"UsageSumFilters", r.usageSumFilters},
		{"Agents", r.agents},
		{"Pending", r.pending},
		{"ListPending", r.listPending},
		{"NotFound", r.notFound},
		{"RejectsEmptyKeys", r.rejectsEmptyKeys},
		{"TimePrecision", r.timePrecision},
		{"CancelledContext", r.cancelledContext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := r.open(t)
			if s == nil {
				t.Fatal("open returned a nil store")
			}
			tt.fn(t, s, uniq{prefix: "st-" + r.run + "-" + tt.name + "-"})
		})
	}
}

type runner struct {
	run  string
	open func(t *testing.T) Store
	// base is a millisecond-precise UTC time unique to the run, so time windows of one run do
	// not contain records left by another in a shared database.
	base time.Time
}

// at returns the run's base time plus d.
func (r *runner) at(d time.Duration) time.Time { return r.base.Add(d) }

// uniq makes keys unique to a run and subtest.
type uniq struct{ prefix string }

func (u uniq) key(name string) string                  { return u.prefix + name }
func (u uniq) session(name string) echogate.SessionKey { return echogate.SessionKey(u.prefix + name) }
func (u uniq) mine(s string) bool                      { return strings.HasPrefix(s, u.prefix) }

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("crypto/rand: %v", err)
	}
	return hex.EncodeToString(b)
}

// randomBase picks a millisecond-precise time between 1985 and 2005, away from real traffic.
func randomBase(t *testing.T) time.Time {
	t.Helper()
	start := time.Date(1985, 1, 1, 0, 0, 0, 0, time.UTC)
	n, err := rand.Int(rand.Reader, big.NewInt(int64(20*365*24*time.Hour/time.Millisecond)))
	if err != nil {
		t.Fatalf("crypto/rand: %v", err)
	}
	return start.Add(time.Duration(n.Int64()) * time.Millisecond)
}
