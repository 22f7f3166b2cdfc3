package memory

import "errors"

var (
	// ErrInvalid is wrapped for bad arguments and configuration.
	ErrInvalid = errors.New("invalid argument")
	// ErrBadExtraction is wrapped when the model's extraction output was not valid JSON of the
	// expected shape, also after one retry: nothing is stored.
	ErrBadExtraction = errors.New("invalid extraction output")
)

// ErrNoEmbedder: Reembed was asked of a service without an embedder or without a recorded
// embedder name (nothing to re-embed with).
var ErrNoEmbedder = errors.New("no embedder configured")
