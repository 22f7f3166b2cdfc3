package postgres

import (
	"errors"

	"github.com/echogate/echogate"
)

// ErrNotFound is wrapped when a record does not exist. It is echogate.ErrNotFound, so
// errors.Is(err, echogate.ErrNotFound) holds for every not-found error of this package.
var ErrNotFound = echogate.ErrNotFound

var (
	// ErrNotOpen is returned by every method called before Open succeeded.
	ErrNotOpen = errors.New("postgres: store is not open (call Open first)")
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("postgres: store is closed")
	// ErrInvalid is wrapped when an argument cannot be stored (an empty key or id, a bad value)
	// or a Config field is invalid.
	ErrInvalid = errors.New("invalid argument")
	// ErrExists is wrapped when a record that must be new already exists (CreateTurn of an id
	// that is taken).
	ErrExists = errors.New("already exists")
	// ErrSchemaTooNew is wrapped by Migrate when the database was migrated by a newer echogate
	// than this binary: running on it could corrupt data, so upgrade the binary instead.
	ErrSchemaTooNew = errors.New("database schema is newer than this binary")
)
