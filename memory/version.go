package memory

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/echogate/echogate"
)

// Memory versions let the pipeline keep a session's memory snapshot frozen in the system prompt
// (a prefix the model provider can cache) until what it shows may have changed. Every write
// through this Service (Remember, Forget, a completed consolidation) bumps the counters of the
// owners it touched. The counters are striped by owner: memory stays bounded whatever the
// number of users, and a write makes at most the users sharing its stripe render once more.
// Writes from elsewhere (another replica, the CLI) are not seen: the pipeline also re-renders
// a snapshot after an hour.
const versionStripes = 256

type versions struct {
	seed    maphash.Seed
	stripes [versionStripes]atomic.Uint64
}

func (v *versions) bump(owners ...string) {
	for _, o := range owners {
		v.stripes[maphash.String(v.seed, o)%versionStripes].Add(1)
	}
}

func (v *versions) of(owners []string) uint64 {
	var sum uint64
	for _, o := range owners {
		sum += v.stripes[maphash.String(v.seed, o)%versionStripes].Load()
	}
	return sum
}

// ContextVersion is the version of the memory snapshot ContextSection renders for q: it
// changes whenever a write through this Service touched one of its owners. It does no I/O.
func (s *Service) ContextVersion(q echogate.ContextQuery) uint64 {
	return s.ver.of(s.Owners(q.UserID, q.Channel))
}
