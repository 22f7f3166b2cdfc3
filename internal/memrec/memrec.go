// Package memrec holds the record values of long-term memory and the knowledge base: what
// storage/sqlite and storage/postgres persist, what memory and knowledge read and write, and what
// the memory and knowledge tools show.
//
// They are values only (standard library only), like the records of the root package. They live
// here rather than in records.go because the root contract files are frozen while this feature
// lands; moving them to the root package later is a mechanical rename.
package memrec

import (
	"errors"
	"sort"
	"strconv"
	"time"
)

// Memory kinds. A memory's kind is free text of at most 32 bytes; these are the ones the gateway
// produces.
const (
	KindFact       = "fact"       // a durable fact about the owner ("works at Acme")
	KindPreference = "preference" // a taste or a habit ("likes Helix")
	KindEphemeral  = "ephemeral"  // true for a while ("is on holiday this week"); has an expiry
	KindNote       = "note"       // something the user asked to remember verbatim
)

// Owner prefixes: memories belong to a user, a channel or a team (workspace).
const (
	OwnerUser    = "user:"    // user:slack:U123 (the qualified user id after the prefix)
	OwnerChannel = "channel:" // channel:slack:C42
	OwnerTeam    = "team:"    // team:slack:T1
)

// UserOwner returns the owner key of a qualified user id ("slack:U123").
func UserOwner(userID string) string { return OwnerUser + userID }

// ChannelOwner returns the owner key of a channel ("slack:C42").
func ChannelOwner(channel string) string { return OwnerChannel + channel }

// Memory is one long-term memory.
type Memory struct {
	ID         string    `json:"id"`
	Owner      string    `json:"owner"` // see the Owner* prefixes
	Text       string    `json:"text"`
	Kind       string    `json:"kind"`
	Importance float64   `json:"importance"` // 0..1
	Pinned     bool      `json:"pinned"`     // always in the snapshot
	Embedding  []float32 `json:"-"`          // nil when it could not be computed (then text search only)
	// EmbedModel names the embedder that made Embedding ("provider:model@dims", like
	// Document.EmbedModel); empty when there is no vector or it predates the record.
	EmbedModel string    `json:"embed_model,omitempty"`
	Session    string    `json:"session,omitempty"`
	SourceTurn string    `json:"source_turn,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	ExpiresAt  time.Time `json:"expires_at,omitzero"` // zero: never
	// SupersededBy is the id of the memory that replaced this one (history is kept); empty for a
	// current memory.
	SupersededBy string    `json:"superseded_by,omitempty"`
	SupersededAt time.Time `json:"superseded_at,omitzero"`
}

// Current reports whether m is neither superseded nor expired at now.
func (m Memory) Current(now time.Time) bool {
	return m.SupersededBy == "" && (m.ExpiresAt.IsZero() || m.ExpiresAt.After(now))
}

// MemoryFilter selects memories to list. Empty fields match everything.
type MemoryFilter struct {
	Owners []string // any of these owners; empty: all
	// Current, when true, leaves out superseded memories and those expired at Now.
	Current bool
	Now     time.Time
	Pinned  bool // only pinned memories
	// StaleFor, when set, selects only memories whose vector is missing or was made by another
	// embedder than StaleFor (the ones vector search with that embedder does not compare).
	StaleFor string
	Limit    int // <= 0: no limit
}

// ScoredMemory is a search hit: Rank starts at 1; Score is the backend's similarity (cosine
// similarity for vector search, a positive relevance for text search; higher is better).
type ScoredMemory struct {
	Memory
	Rank  int     `json:"rank"`
	Score float64 `json:"score"`
}

// MemoryQuery is a search over current memories.
type MemoryQuery struct {
	Owners []string  // required: whose memories
	Vector []float32 // vector search
	// EmbedModel, when set, restricts vector search to memories whose EmbedModel equals it:
	// another embedder's vectors are not comparable with the query's (text search ignores it).
	EmbedModel string
	Text       string    // text search
	Now        time.Time // memories expired at Now are left out
	Limit      int       // hits; <= 0 means 10
}

// ConsolidationJob is the pending consolidation of one person's part of a session (Session,
// UserID: each has a job and a cursor of its own), as claimed by one worker.
type ConsolidationJob struct {
	Session  string    `json:"session"`
	UserID   string    `json:"user_id"`
	Channel  string    `json:"channel"`
	Cursor   int64     `json:"cursor"` // last transcript Seq of UserID's turns already consolidated
	Attempts int       `json:"attempts"`
	DueAt    time.Time `json:"due_at"`
	// Worker and Gen identify the claim: completing or releasing a job checks both, so a worker
	// whose lease ran out cannot overwrite another worker's outcome.
	Worker     string    `json:"worker"`
	Gen        int64     `json:"gen"`
	LeaseUntil time.Time `json:"lease_until"`
	LastError  string    `json:"last_error,omitempty"`
}

// ConsolidationResult is applied atomically with the cursor advance by CompleteConsolidation.
type ConsolidationResult struct {
	Insert []Memory // new memories
	// Update rewrites Text, Kind, Importance, UpdatedAt, ExpiresAt, SourceTurn of existing
	// memories (near-duplicates merged), and Embedding with EmbedModel when Embedding is set.
	Update []Memory
	// Supersede marks memories replaced: Old gets SupersededBy = New and SupersededAt = At.
	Supersede []Supersession
	// ExpireOwner and ExpireBefore delete the owner's memories that expired before ExpireBefore
	// (ephemeral facts past their time); zero ExpireBefore deletes nothing.
	ExpireOwner  string
	ExpireBefore time.Time
	Cursor       int64 // the new cursor (last Seq consolidated)
}

// Supersession replaces one memory by another.
type Supersession struct {
	Old string    `json:"old"`
	New string    `json:"new"`
	At  time.Time `json:"at"`
}

// Document is one ingested knowledge-base source (a file).
type Document struct {
	ID          string `json:"id"`     // stable id derived from Source
	Source      string `json:"source"` // absolute path or URI
	Title       string `json:"title"`
	MIME        string `json:"mime"`
	ContentHash string `json:"content_hash"` // sha256 hex of the raw bytes
	Bytes       int64  `json:"bytes"`
	Chunks      int    `json:"chunks"`
	// EmbedModel names the embedder that made the document's vectors ("provider:model@dims",
	// e.g. "openai:text-embedding-3-small@1536", "demo:hash@1536"); empty when the document has
	// no vectors or was added before models were recorded.
	EmbedModel string    `json:"embed_model"`
	AddedAt    time.Time `json:"added_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Chunk is one passage of a document.
type Chunk struct {
	DocID     string    `json:"doc_id"`
	Seq       int       `json:"seq"`     // 0-based position in the document
	Heading   string    `json:"heading"` // the section path it belongs to ("Install › Linux")
	Text      string    `json:"text"`
	Start     int       `json:"start"` // byte offsets in the extracted text
	End       int       `json:"end"`
	Embedding []float32 `json:"-"`
}

// Passage is a knowledge search hit.
type Passage struct {
	DocID   string  `json:"doc_id"`
	Seq     int     `json:"seq"`
	Source  string  `json:"source"`
	Title   string  `json:"title"`
	Heading string  `json:"heading"`
	Text    string  `json:"text"`
	Start   int     `json:"start"`
	End     int     `json:"end"`
	Rank    int     `json:"rank"`
	Score   float64 `json:"score"`
	// EmbedModel is the document's Document.EmbedModel.
	EmbedModel string `json:"embed_model,omitempty"`
}

// Ref is the citation id of a passage: "<doc id>#<seq>".
func (p Passage) Ref() string { return p.DocID + "#" + strconv.Itoa(p.Seq) }

// PassageQuery is a knowledge search.
type PassageQuery struct {
	Vector []float32
	Text   string
	Limit  int // <= 0 means 10
}

// Errors the stores wrap, so that memory, knowledge and tests can tell them apart whichever
// backend is used.
var (
	// ErrLeaseLost: a consolidation job's lease was taken over by another worker (this one ran past
	// its lease); nothing was written.
	ErrLeaseLost = errors.New("consolidation lease lost")
	// ErrDims: a vector's size differs from the one the store holds (embeddings.dimensions).
	ErrDims = errors.New("embedding dimensions mismatch")
)

// RRFK is the rank constant of reciprocal rank fusion (Cormack et al.: 60).
const RRFK = 60

// Fuse merges ranked lists of ids with reciprocal rank fusion: score(id) = Σ 1/(RRFK + rank).
// It returns the ids best first (ties keep first-seen order) with their fused scores.
func Fuse(lists ...[]string) ([]string, map[string]float64) {
	score := map[string]float64{}
	var order []string
	for _, l := range lists {
		for i, id := range l {
			if _, ok := score[id]; !ok {
				order = append(order, id)
			}
			score[id] += 1 / float64(RRFK+i+1)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return score[order[a]] > score[order[b]] })
	return order, score
}
