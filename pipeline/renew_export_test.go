package pipeline

import "time"

// SetClaimRenewEvery sets how often p renews its claims (default ReplayAfter/3); call it
// before Run.
func SetClaimRenewEvery(p *Pipeline, d time.Duration) { p.shared.renewEvery = d }
