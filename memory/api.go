package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/ids"
	"github.com/echogate/echogate/internal/memrec"
)

// Note is what a caller asks to remember.
type Note struct {
	Owner      string        // memrec.UserOwner(…) or memrec.ChannelOwner(…); required
	Text       string        // required, at most Config.MaxMemoryChars
	Kind       string        // default memrec.KindNote
	Importance float64       // 0..1; default 0.6
	Pinned     bool          // always in the snapshot
	TTL        time.Duration // > 0: expires after it
	Session    echogate.SessionKey
	Turn       string
	UserID     string // for usage attribution
	Channel    string
}

// Remember stores a memory, or refreshes a near-duplicate of it (cosine ≥ DuplicateSimilarity,
// or the same text) instead of adding a second copy. It embeds the text (without a vector when
// the endpoint is down) and blocks on the store.
func (s *Service) Remember(ctx context.Context, n Note) (memrec.Memory, error) {
	text := strings.TrimSpace(n.Text)
	switch {
	case n.Owner == "":
		return memrec.Memory{}, fmt.Errorf("memory: remember: %w: no owner", ErrInvalid)
	case text == "":
		return memrec.Memory{}, fmt.Errorf("memory: remember: %w: the text is empty", ErrInvalid)
	case len(text) > s.cfg.MaxMemoryChars:
		return memrec.Memory{}, fmt.Errorf("memory: remember: %w: the text has %d characters, at most %d are kept: store one short fact at a time", ErrInvalid, len(text), s.cfg.MaxMemoryChars)
	case n.Importance < 0 || n.Importance > 1:
		return memrec.Memory{}, fmt.Errorf("memory: remember: %w: importance %v must be between 0 and 1", ErrInvalid, n.Importance)
	}
	if n.Kind == "" {
		n.Kind = memrec.KindNote
	}
	if n.Importance == 0 {
		n.Importance = 0.6
	}
	now := s.cfg.Now()
	m := memrec.Memory{ID: ids.New("m_"), Owner: n.Owner, Text: text, Kind: n.Kind, Importance: n.Importance, Pinned: n.Pinned,
		Session: string(n.Session), SourceTurn: n.Turn, CreatedAt: now, UpdatedAt: now}
	if n.TTL > 0 {
		m.ExpiresAt = now.Add(n.TTL)
	}
	m.Embedding = s.embedOne(ctx, text, echogate.TriggerMessage, n.Session, n.UserID, n.Channel)
	if m.Embedding != nil {
		m.EmbedModel = s.cfg.EmbedModel
	}
	if dup, ok, err := s.duplicate(ctx, n.Owner, text, m.Embedding); err != nil {
		return memrec.Memory{}, err
	} else if ok {
		dup.Text, dup.Kind, dup.UpdatedAt, dup.ExpiresAt = text, m.Kind, now, m.ExpiresAt
		dup.Importance = max(dup.Importance, m.Importance)
		dup.Pinned = dup.Pinned || m.Pinned
		if m.Embedding != nil {
			dup.Embedding, dup.EmbedModel = m.Embedding, m.EmbedModel
		}
		m = dup
	}
	defer s.ver.bump(n.Owner) // also after a failed write: it may have committed
	if err := s.store.PutMemory(ctx, m); err != nil {
		return memrec.Memory{}, fmt.Errorf("memory: remember for %s: %w", n.Owner, err)
	}
	return m, nil
}

// duplicate finds a current memory of owner that says the same as text.
func (s *Service) duplicate(ctx context.Context, owner, text string, vec []float32) (memrec.Memory, bool, error) {
	q := memrec.MemoryQuery{Owners: []string{owner}, Text: text, Vector: vec, EmbedModel: s.cfg.EmbedModel, Now: s.cfg.Now(), Limit: 5}
	if len(vec) > 0 {
		hits, err := s.store.SearchMemoriesVector(ctx, q)
		if err != nil {
			return memrec.Memory{}, false, fmt.Errorf("memory: look for duplicates: %w", err)
		}
		if len(hits) > 0 && hits[0].Score >= s.cfg.DuplicateSimilarity && s.comparable(hits[0].Memory) {
			return hits[0].Memory, true, nil
		}
	}
	hits, err := s.store.SearchMemoriesText(ctx, q)
	if err != nil {
		return memrec.Memory{}, false, fmt.Errorf("memory: look for duplicates: %w", err)
	}
	for _, h := range hits {
		if strings.EqualFold(strings.TrimSpace(h.Text), text) {
			return h.Memory, true, nil
		}
	}
	return memrec.Memory{}, false, nil
}

// Recall searches the current memories of owners for query (hybrid search), best first.
func (s *Service) Recall(ctx context.Context, owners []string, query string, limit int, session echogate.SessionKey, userID, channel string) ([]memrec.ScoredMemory, error) {
	if len(owners) == 0 {
		return nil, fmt.Errorf("memory: recall: %w: no owner", ErrInvalid)
	}
	if limit <= 0 {
		limit = 10
	}
	if strings.TrimSpace(query) == "" {
		ms, err := s.store.ListMemories(ctx, memrec.MemoryFilter{Owners: owners, Current: true, Now: s.cfg.Now(), Limit: limit})
		if err != nil {
			return nil, fmt.Errorf("memory: recall: %w", err)
		}
		out := make([]memrec.ScoredMemory, len(ms))
		for i, m := range ms {
			out[i] = memrec.ScoredMemory{Memory: m, Rank: i + 1}
		}
		return out, nil
	}
	vec := s.embedOne(ctx, query, echogate.TriggerMessage, session, userID, channel)
	return s.search(ctx, owners, query, vec, limit, 0)
}

// Forget deletes memory id. When owners is not empty the memory must belong to one of them (a
// user forgets only their own memories); otherwise the result is ErrNotFound.
func (s *Service) Forget(ctx context.Context, owners []string, id string) (memrec.Memory, error) {
	m, err := s.store.GetMemory(ctx, id)
	if err != nil {
		return memrec.Memory{}, fmt.Errorf("memory: forget %s: %w", id, err)
	}
	if len(owners) > 0 && !contains(owners, m.Owner) {
		return memrec.Memory{}, fmt.Errorf("memory: forget %s: %w", id, echogate.ErrNotFound)
	}
	defer s.ver.bump(m.Owner)
	if err := s.store.DeleteMemory(ctx, id); err != nil && !errors.Is(err, echogate.ErrNotFound) {
		return memrec.Memory{}, fmt.Errorf("memory: forget %s: %w", id, err)
	}
	return m, nil
}

// List lists memories (for the CLI and the console).
func (s *Service) List(ctx context.Context, f memrec.MemoryFilter) ([]memrec.Memory, error) {
	if f.Now.IsZero() {
		f.Now = s.cfg.Now()
	}
	ms, err := s.store.ListMemories(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	return ms, nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
