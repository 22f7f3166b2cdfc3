package pipeline

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/echogate/echogate"
)

// sessionTouchEvery is how often the session record of an active session is written: at its
// first event in this process, then at most once per interval, so its UpdatedAt (the
// session's last activity, shown by the console and the sessions API) is accurate to within
// it. At 1000 sessions writing it on every event was a quarter of the main writer's calls.
const sessionTouchEvery = time.Minute

// sessionMarks remembers when this process last wrote each session's record. A mark is only
// trusted together with the history cache: a turn that skipped the write because of a mark
// writes it after all when its transcript turned out not to be the one it cached (the session
// was deleted meanwhile, perhaps elsewhere) or was not cached (see buildContext).
//
// Bounded: 16 shards of at most marksPerShard sessions; a full shard drops marks older than
// sessionTouchEvery first, then arbitrary ones (whose sessions are simply written again).
type sessionMarks struct {
	seed   maphash.Seed
	shards [16]markShard
}

const marksPerShard = 4096

type markShard struct {
	mu sync.Mutex
	m  map[echogate.SessionKey]time.Time
}

func newSessionMarks() *sessionMarks {
	s := &sessionMarks{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].m = make(map[echogate.SessionKey]time.Time)
	}
	return s
}

func (s *sessionMarks) shard(key echogate.SessionKey) *markShard {
	return &s.shards[maphash.String(s.seed, string(key))%uint64(len(s.shards))]
}

// fresh reports whether key's record was written less than sessionTouchEvery before now.
func (s *sessionMarks) fresh(key echogate.SessionKey, now time.Time) bool {
	sh := s.shard(key)
	sh.mu.Lock()
	at, ok := sh.m[key]
	sh.mu.Unlock()
	return ok && now.Sub(at) < sessionTouchEvery && !at.After(now)
}

// mark records that key's record was written at at.
func (s *sessionMarks) mark(key echogate.SessionKey, at time.Time) {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.m[key]; !ok && len(sh.m) >= marksPerShard {
		for k, t := range sh.m {
			if at.Sub(t) >= sessionTouchEvery {
				delete(sh.m, k)
			}
		}
		for k := range sh.m {
			if len(sh.m) < marksPerShard {
				break
			}
			delete(sh.m, k)
		}
	}
	sh.m[key] = at
}

// forget drops key's mark: its record is written at its next event.
func (s *sessionMarks) forget(key echogate.SessionKey) {
	sh := s.shard(key)
	sh.mu.Lock()
	delete(sh.m, key)
	sh.mu.Unlock()
}

// sweep drops the marks older than sessionTouchEvery at now: they no longer spare a write, and
// an idle session should hold nothing here.
func (s *sessionMarks) sweep(now time.Time) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, at := range sh.m {
			if now.Sub(at) >= sessionTouchEvery {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
}

// len returns the number of marks.
func (s *sessionMarks) len() int {
	n := 0
	for i := range s.shards {
		s.shards[i].mu.Lock()
		n += len(s.shards[i].m)
		s.shards[i].mu.Unlock()
	}
	return n
}
