// Package lease names the store contract for named, expiring leases: at most one owner holds a
// lease at a time, until it releases it or lets it expire (a dead owner's lease expires by
// itself). Replicas use them to share work out through their common database, e.g. Discord
// shards (channels/discord) and the pace of gateway identifies. Both stores implement Store;
// storage/storagetest.RunLeases is its conformance suite.
//
// Times come from the caller's clock (now), so an expiry is as good as the replicas' clocks
// agree: keep them synchronised (NTP), and leases longer than the skew.
package lease

import (
	"context"
	"time"
)

// Store hands out leases.
type Store interface {
	// Acquire takes the lease name for owner until now+ttl when it is free, expired, or
	// already owner's (a renewal), and reports whether owner holds it now. It blocks for one
	// database write. ttl must be positive; empty names and owners are rejected.
	Acquire(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (bool, error)
	// Release gives owner's lease name up at once; releasing a lease owner does not hold is no
	// error (it expired and someone else may hold it).
	Release(ctx context.Context, name, owner string) error
	// Holders returns the owners of the leases whose names start with prefix and that have
	// not expired at now, by name.
	Holders(ctx context.Context, prefix string, now time.Time) (map[string]string, error)
}
