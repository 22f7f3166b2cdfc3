package memorytest

import (
	"context"

	"github.com/echogate/echogate"
)

func (s *Store) MessagesAfter(ctx context.Context, key echogate.SessionKey, after int64, limit int) ([]echogate.StoredMessage, error) {
	return nil, nil
}
