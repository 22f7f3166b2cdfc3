package memory

import "errors"

var (
	// ErrInvalid is wrapped for bad arguments and configuration.
	ErrInvalid = errors.New("invalid argument")
	// ErrBadExtraction is wrapped when the model's extraction output was not valid JSON of the
	// expected shape, also after one retry: nothing is stored.
	ErrBadExtraction = errors.New("invalid extraction output")
)
