package compress

import "errors"

// ErrConfig is wrapped by New when the Config or a dependency is invalid; the message names the
// field and the fix.
var ErrConfig = errors.New("compress: invalid configuration")

// errEmptySummary means the summarizing model answered with no text; Compact falls back to
// dropping the oldest turns.
var errEmptySummary = errors.New("compress: the model returned an empty summary")
