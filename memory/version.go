package memory

import (
	"encoding/binary"
	"hash/maphash"
	"sync/atomic"

	"github.com/echogate/echogate"
)

// Memory versions let the pipeline keep a person's memory snapshot frozen in the system prompt
// (a prefix the model provider can cache) until what it shows may have changed. Every write
// through this Service (Remember, Forget, a completed consolidation) bumps the counters of the
// owners it touched. The counters are striped by owner: memory stays bounded whatever the
// number of users, and a write makes at most the users sharing its stripe render once more.
// Writes from elsewhere (another replica, the CLI) are not seen: the pipeline also re-renders
// a snapshot after an hour.
//
// A version names its owners, not only a count: it is a hash, seeded anew by every Service,
// of the owners and their stripes' counters. Two people's versions differ (but for a 2^-64
// chance), also when neither wrote anything, and a restarted process (or a Service rebuilt by a
// reload, its counters back at 0) never repeats a version an earlier one handed out.
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
	var h maphash.Hash
	h.SetSeed(v.seed)
	var n [8]byte
	for _, o := range owners {
		h.WriteString(o)
		binary.LittleEndian.PutUint64(n[:], v.stripes[maphash.String(v.seed, o)%versionStripes].Load())
		h.Write(n[:])
	}
	return h.Sum64()
}

// ContextVersion is the version of the memory snapshot ContextSection renders for q: it
// changes whenever a write through this Service touched one of its owners. It does no I/O.
func (s *Service) ContextVersion(q echogate.ContextQuery) uint64 {
	return s.ver.of(s.Owners(q.UserID, q.Channel))
}
