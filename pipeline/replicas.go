package pipeline

import "time"

// sharedStore is what a store shared by replicas (PostgreSQL) offers the pipeline, read once
// at New like a replier's Caps: nil fields when the store lacks them. Only coordination
// between replicas branches on it (who runs a session, who replays an abandoned event, where a
// stop goes, whether this process's caches are the only writer's); the order of a turn's
// writes is the store's own (TurnLog.BeginTurn).
type sharedStore struct {
	locker    SessionLocker  // one session's turns on one replica at a time
	reclaimer EventReclaimer // a dead replica's events taken over
	renewer   ClaimRenewer   // the claims of the events this replica holds kept fresh (renew.go)
	// renewEvery overrides how often claims are renewed (tests); 0: ReplayAfter/3.
	renewEvery time.Duration
	stops      StopFlags // stops for a turn on another replica (only with a locker)
	// pendLocker takes the lock and reads the paused turn in one round trip (a locker's
	// optional capability); nil when the locker cannot.
	pendLocker PendingLocker
	// claimLocker claims an idle session's event and takes its lock in one round trip (a
	// pending locker's optional capability); nil when the store cannot.
	claimLocker ClaimLocker
}

func sharedStoreOf(st Store) sharedStore {
	var s sharedStore
	s.locker, _ = st.(SessionLocker)
	if s.locker != nil {
		s.pendLocker, _ = st.(PendingLocker)
	}
	if s.pendLocker != nil {
		s.claimLocker, _ = st.(ClaimLocker)
	}
	s.reclaimer, _ = st.(EventReclaimer)
	s.renewer, _ = st.(ClaimRenewer)
	if sf, ok := st.(StopFlags); ok && s.locker != nil {
		s.stops = sf
	}
	return s
}

// replicas reports whether the store is shared by replicas (it is a SessionLocker): this
// process is then not the only writer of its transcripts, pauses and turns.
func (s sharedStore) replicas() bool { return s.locker != nil }
