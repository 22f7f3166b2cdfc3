// Package storagetest is the conformance suite of the gateway's stores: storage/sqlite and
// storage/postgres both run it, so the pipeline sees one behaviour whichever backend it uses.
//
// Store repeats the method set of pipeline.Store (storage packages may not import pipeline);
// the composition root asserts at compile time that the two stay identical.
package storagetest

import (
	"context"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/turnstart"
)

// Store is the method set of pipeline.Store. See pipeline/store.go for the contract; Run pins
// the details the contract leaves open (listed in the package storage documentation).
type Store interface {
	// EventStore
	ClaimEvent(ctx context.Context, key string, payload []byte, at time.Time) (bool, error)
	CompleteEvent(ctx context.Context, key string, at time.Time) error
	UnfinishedEvents(ctx context.Context, before time.Time, limit int) ([]echogate.ClaimedEvent, error)
	ReopenEvent(ctx context.Context, key string) error

	// SessionStore
	UpsertSession(ctx context.Context, s echogate.SessionInfo) error
	GetSession(ctx context.Context, key echogate.SessionKey) (echogate.SessionInfo, error)
	ListSessions(ctx context.Context, limit int) ([]echogate.SessionInfo, error)
	DeleteSession(ctx context.Context, key echogate.SessionKey) error
	AppendMessages(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, at time.Time) error
	History(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.StoredMessage, error)
	HistorySince(ctx context.Context, key echogate.SessionKey, after echogate.StoredMessage, limit int) ([]echogate.StoredMessage, bool, error)
	GrantTool(ctx context.Context, key echogate.SessionKey, user, tool, by string, at time.Time) error
	Grants(ctx context.Context, key echogate.SessionKey, user string) (map[string]string, error)

	// TurnLog
	BeginTurn(ctx context.Context, b turnstart.Begin) *turnstart.Start
	CreateTurn(ctx context.Context, t echogate.TurnRecord) error
	UpdateTurn(ctx context.Context, t echogate.TurnRecord) error
	GetTurn(ctx context.Context, id string) (echogate.TurnRecord, error)
	ListTurns(ctx context.Context, key echogate.SessionKey, limit int) ([]echogate.TurnRecord, error)
	ResumeTurn(ctx context.Context, r echogate.TurnResume, rec echogate.TurnRecord) error
	GetResume(ctx context.Context, eventKey string) (echogate.TurnResume, error)
	RecordToolRun(ctx context.Context, turn, callID string, result []byte, at time.Time) error
	FinishTurn(ctx context.Context, end echogate.TurnEnd) error
	RecordProgress(ctx context.Context, key echogate.SessionKey, turn string, msgs []echogate.Message, usage []echogate.UsageRecord, at time.Time) error
	RecordPosting(ctx context.Context, turn string, ref echogate.MessageRef) error
	GetPosting(ctx context.Context, turn string) (echogate.MessageRef, error)

	// UsageStore
	RecordUsage(ctx context.Context, r echogate.UsageRecord) (int64, error)
	SumUsage(ctx context.Context, f echogate.UsageFilter) (echogate.Usage, error)
	ListUsage(ctx context.Context, f echogate.UsageFilter, limit int) ([]echogate.UsageRecord, error)

	// PendingStore
	SavePending(ctx context.Context, p echogate.PendingTurn) error
	GetPending(ctx context.Context, key echogate.SessionKey) (echogate.PendingTurn, error)
	DeletePending(ctx context.Context, key echogate.SessionKey) error
	ListPending(ctx context.Context, limit int) ([]echogate.PendingTurn, error)
	PendingByPrompt(ctx context.Context, ref echogate.MessageRef) (echogate.PendingTurn, error)
}
