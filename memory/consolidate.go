package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/ids"
	"github.com/echogate/echogate/internal/memrec"
)

// Enqueue schedules the consolidation of userID's part of a session after their answered turn:
// durable (a row in the store), debounced (due Config.Debounce after the latest turn, at most
// Config.MaxDelay after the first pending one). Every person of a shared session has a job of
// their own, which reads only their turns. It blocks on one write; pipeline AfterTurn hooks
// call it. A turn without a user (nobody to credit) enqueues nothing.
func (s *Service) Enqueue(ctx context.Context, session echogate.SessionKey, userID, channel string) error {
	if s.ext == nil || userID == "" {
		return nil
	}
	now := s.cfg.Now()
	err := s.store.EnqueueConsolidation(ctx, memrec.ConsolidationJob{Session: string(session), UserID: userID, Channel: channel, DueAt: now.Add(s.cfg.Debounce)},
		now.Add(s.cfg.MaxDelay))
	if err != nil {
		return fmt.Errorf("memory: enqueue consolidation of %s: %w", session, err)
	}
	return nil
}

// Run is the ConsolidationWorker: it claims due jobs one at a time and runs them until ctx ends,
// looking for work every Config.PollInterval (at once after a job, in case more are due). It
// returns nil when ctx ends (a job in progress is abandoned unwritten: its lease expires and it
// runs again, from the same cursor). Without an Extractor it returns at once.
func (s *Service) Run(ctx context.Context) error {
	if s.ext == nil {
		return nil
	}
	for {
		did, err := s.RunOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			s.log.Warn("memory: consolidation", "err", err)
		}
		if did {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.cfg.After(s.cfg.PollInterval):
		}
	}
}

// RunOnce claims one due job and runs it. It reports whether a job was claimed. A failed job is
// released for a retry (backing off) and its error returned; a job whose lease was lost is
// dropped (another worker owns it).
func (s *Service) RunOnce(ctx context.Context) (bool, error) {
	if s.ext == nil {
		return false, nil
	}
	now := s.cfg.Now()
	j, ok, err := s.store.ClaimConsolidation(ctx, s.cfg.WorkerID, now, s.cfg.Lease)
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("memory: claim consolidation: %w", err)
		}
		return false, err
	}
	log := s.log.With("session", j.Session, "worker", s.cfg.WorkerID)
	if s.hooks.Budget != nil {
		if berr := s.hooks.Budget(ctx, j.UserID, j.Channel); berr != nil {
			log.Info("memory: consolidation deferred by budget", "err", berr)
			if err := s.store.ReleaseConsolidation(ctx, j, now.Add(s.cfg.DeferBackoff), "deferred: "+berr.Error()); err != nil && !errors.Is(err, memrec.ErrLeaseLost) {
				return true, fmt.Errorf("memory: defer consolidation of %s: %w", j.Session, err)
			}
			return true, nil
		}
	}
	res, err := s.consolidate(ctx, j)
	if err == nil {
		err = s.store.CompleteConsolidation(ctx, j, res)
		s.ver.bump(s.Owners(j.UserID, j.Channel)...)
		if err == nil {
			log.Info("memory: consolidated", "inserted", len(res.Insert), "updated", len(res.Update), "superseded", len(res.Supersede), "cursor", res.Cursor)
			return true, nil
		}
	}
	if errors.Is(err, memrec.ErrLeaseLost) {
		log.Warn("memory: consolidation lease lost; another worker redoes the job", "err", err)
		return true, nil
	}
	if ctx.Err() != nil {
		return true, ctx.Err() // abandoned: the lease expires and the job runs again
	}
	retry := time.Time{}
	if j.Attempts < s.cfg.MaxAttempts {
		retry = now.Add(s.cfg.RetryBackoff << min(j.Attempts-1, 10))
	} else {
		log.Error("memory: consolidation failed too often; dropped until the session's next turn", "attempts", j.Attempts, "err", err)
	}
	if rerr := s.store.ReleaseConsolidation(ctx, j, retry, err.Error()); rerr != nil && !errors.Is(rerr, memrec.ErrLeaseLost) {
		log.Error("memory: release consolidation job", "err", rerr)
	}
	return true, fmt.Errorf("memory: consolidate %s (attempt %d): %w", j.Session, j.Attempts, err)
}

// fact is one item of the extraction output.
type fact struct {
	Text       string   `json:"text"`
	Kind       string   `json:"kind"`
	Importance *float64 `json:"importance"`
	Supersedes int      `json:"supersedes,omitempty"`
	TTL        string   `json:"ttl,omitempty"`
}

const extractSystem = `You maintain the long-term memory of a chat assistant about one user.
From the NEW CONVERSATION, extract durable facts about the user worth remembering in later conversations: identity, preferences, tools, projects, relationships, standing instructions. Skip small talk, questions, one-off requests, facts about the world, and anything the assistant said that the user did not confirm.
Answer with a JSON array only, no prose, no code fences. Each item:
{"text": "<one short fact in third person, e.g. \"Favourite editor is Helix\">", "kind": "fact" | "preference" | "ephemeral" | "note", "importance": <0..1>, "supersedes": <number of the EXISTING MEMORY it replaces, when the user contradicted or updated it; omit otherwise>, "ttl": "<how long an ephemeral fact stays true, like \"72h\" or \"14d\"; only for kind ephemeral>"}
Do not repeat existing memories that are unchanged. Answer [] when there is nothing new.`

// consolidate computes the result of one job (no writes). The job is one person's: it reads
// only the turns that person requested (their words and the answers to them), so in a shared
// session nobody is credited with, or can write into, another participant's memory.
func (s *Service) consolidate(ctx context.Context, j memrec.ConsolidationJob) (memrec.ConsolidationResult, error) {
	now := s.cfg.Now()
	owner := memrec.UserOwner(j.UserID)
	res := memrec.ConsolidationResult{Cursor: j.Cursor, ExpireOwner: owner, ExpireBefore: now}
	if j.UserID == "" {
		return res, nil // a job of an older version without a person: nobody to credit
	}
	msgs, err := s.store.MessagesBy(ctx, echogate.SessionKey(j.Session), j.UserID, j.Cursor, s.cfg.MaxMessages)
	if err != nil {
		return res, fmt.Errorf("read transcript: %w", err)
	}
	if len(msgs) == 0 {
		return res, nil
	}
	res.Cursor = msgs[len(msgs)-1].Seq
	convo, userText, lastTurn := transcriptOf(msgs)
	if strings.TrimSpace(userText) == "" {
		return res, nil
	}
	report := func(u echogate.Usage) {
		s.report(ctx, u, echogate.TriggerConsolidation, echogate.SessionKey(j.Session), j.UserID, j.Channel)
	}
	// Existing memories the new facts may update or contradict.
	qv := s.embedMany(ctx, []string{clip(userText, 4000)}, echogate.TriggerConsolidation, echogate.SessionKey(j.Session), j.UserID, j.Channel)
	var vec []float32
	if qv != nil {
		vec = qv[0]
	}
	existing, err := s.search(ctx, []string{owner}, userText, vec, 15, 0)
	if err != nil {
		return res, err
	}
	facts, err := s.extract(ctx, consolidationPrompt(existing, now, convo), len(existing), report)
	if err != nil {
		return res, err
	}
	if len(facts) == 0 {
		return res, nil
	}
	texts := make([]string, len(facts))
	for i, f := range facts {
		texts[i] = f.Text
	}
	vecs := s.embedMany(ctx, texts, echogate.TriggerConsolidation, echogate.SessionKey(j.Session), j.UserID, j.Channel)
	base := memrec.Memory{Owner: owner, Session: j.Session, SourceTurn: lastTurn, CreatedAt: now, UpdatedAt: now}
	s.applyFacts(&res, base, facts, vecs, existing)
	return res, nil
}

// transcriptOf renders the new messages of one person's turns for the extraction prompt (user
// and assistant lines, clipped) and returns the person's words alone and the last message's
// turn. Other people's words quoted into a user message (a thread's earlier messages) are left
// out: they are not the person's.
func transcriptOf(msgs []echogate.StoredMessage) (convo, userText, lastTurn string) {
	var c, u strings.Builder
	for _, m := range msgs {
		lastTurn = m.Turn
		switch m.Message.Role {
		case echogate.RoleUser:
			own := ownWords(m.Message.Content)
			fmt.Fprintf(&c, "User: %s\n", clip(own, 2000))
			u.WriteString(own)
			u.WriteByte(' ')
		case echogate.RoleAssistant:
			if strings.TrimSpace(m.Message.Content) != "" {
				fmt.Fprintf(&c, "Assistant: %s\n", clip(m.Message.Content, 1000))
			}
		}
	}
	return c.String(), u.String(), lastTurn
}

// The block the pipeline puts before a user's message in a thread: the thread's earlier
// messages, by their authors (pipeline/threadctx.go writes it).
const (
	threadContextStart = "[Earlier messages in this thread, oldest first]\n"
	threadContextEnd   = "[End of earlier messages]\n\n"
)

// ownWords returns a saved user message without the thread context quoted before it.
func ownWords(content string) string {
	if !strings.HasPrefix(content, threadContextStart) {
		return content
	}
	if _, rest, ok := strings.Cut(content, threadContextEnd); ok {
		return rest
	}
	return "" // cut off: nothing in it is known to be the person's
}

// consolidationPrompt lists the existing memories, numbered (facts name the one they supersede
// by its number), then the new conversation.
func consolidationPrompt(existing []memrec.ScoredMemory, now time.Time, convo string) string {
	var prompt strings.Builder
	prompt.WriteString("EXISTING MEMORIES:\n")
	if len(existing) == 0 {
		prompt.WriteString("(none)\n")
	}
	for i, m := range existing {
		fmt.Fprintf(&prompt, "%d. %s (%s, %s)\n", i+1, m.Text, m.Kind, m.UpdatedAt.Format("2006-01-02"))
	}
	fmt.Fprintf(&prompt, "\nNEW CONVERSATION (%s):\n%s", now.UTC().Format("2006-01-02"), convo)
	return prompt.String()
}

// applyFacts turns the extracted facts into res's inserts, supersessions and updates: a fact
// that supersedes an existing memory replaces it, a near-duplicate of one updates it, a
// duplicate within the batch is dropped. base carries the owner, session, source turn and time;
// vecs are the facts' embeddings (nil when the embedder was unavailable).
func (s *Service) applyFacts(res *memrec.ConsolidationResult, base memrec.Memory, facts []fact, vecs [][]float32, existing []memrec.ScoredMemory) {
	now := base.CreatedAt
	superseded := map[string]bool{}
	updated := map[string]int{} // memory id -> index in res.Update
	for i, f := range facts {
		var fv []float32
		if vecs != nil {
			fv = vecs[i]
		}
		imp := 0.5
		if f.Importance != nil {
			imp = *f.Importance
		}
		m := base
		m.ID, m.Text, m.Kind, m.Importance, m.Embedding = ids.New("m_"), f.Text, f.Kind, imp, fv
		if fv != nil {
			m.EmbedModel = s.cfg.EmbedModel
		}
		if f.TTL != "" {
			d, _ := parseTTL(f.TTL)
			m.ExpiresAt = now.Add(d)
		}
		if f.Supersedes > 0 {
			old := existing[f.Supersedes-1]
			if !superseded[old.ID] {
				superseded[old.ID] = true
				res.Insert = append(res.Insert, m)
				res.Supersede = append(res.Supersede, memrec.Supersession{Old: old.ID, New: m.ID, At: now})
				continue
			}
		}
		// A near-duplicate of a current memory (or of a fact of this batch) updates it.
		if dup, ok := nearDuplicate(existing, superseded, f.Text, fv, s.cfg.DuplicateSimilarity, s.comparable); ok {
			u := dup.Memory
			u.Text, u.Kind, u.UpdatedAt, u.ExpiresAt, u.SourceTurn = f.Text, f.Kind, now, m.ExpiresAt, base.SourceTurn
			u.Importance = max(u.Importance, imp)
			if fv != nil {
				u.Embedding, u.EmbedModel = fv, s.cfg.EmbedModel
			}
			if k, seen := updated[u.ID]; seen {
				res.Update[k] = u
			} else {
				updated[u.ID] = len(res.Update)
				res.Update = append(res.Update, u)
			}
			continue
		}
		if dupInBatch(res.Insert, f.Text, fv, s.cfg.DuplicateSimilarity) {
			continue
		}
		res.Insert = append(res.Insert, m)
	}
}

// nearDuplicate finds the existing memory that says the same as text: the same words, or a vector
// this close (only vectors that comparable accepts: another embedder's similarity means nothing).
func nearDuplicate(existing []memrec.ScoredMemory, superseded map[string]bool, text string, v []float32, threshold float64, comparable func(memrec.Memory) bool) (memrec.ScoredMemory, bool) {
	best, bestSim := -1, -1.0
	for i, m := range existing {
		if superseded[m.ID] {
			continue
		}
		if strings.EqualFold(strings.TrimSpace(m.Text), strings.TrimSpace(text)) {
			return m, true
		}
		if !comparable(m.Memory) {
			continue
		}
		if sim := cosine(v, m.Embedding); sim > bestSim {
			best, bestSim = i, sim
		}
	}
	if best >= 0 && bestSim >= threshold {
		return existing[best], true
	}
	return memrec.ScoredMemory{}, false
}

func dupInBatch(ins []memrec.Memory, text string, v []float32, threshold float64) bool {
	for _, m := range ins {
		if strings.EqualFold(m.Text, text) || cosine(v, m.Embedding) >= threshold {
			return true
		}
	}
	return false
}

// cosine returns the cosine similarity of a and b, -1 when either is missing.
func cosine(a, b []float32) float64 {
	if len(a) == 0 || len(a) != len(b) {
		return -1
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return -1
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

// extract asks the model for facts and validates them strictly; an invalid answer is retried
// once with the validation error, then the job fails (nothing is stored).
func (s *Service) extract(ctx context.Context, prompt string, nExisting int, report func(echogate.Usage)) ([]fact, error) {
	user := prompt
	var lastErr error
	for attempt := range 2 {
		out, u, err := s.ext.Extract(ctx, extractSystem, user)
		u.Kind = echogate.UsageConsolidation
		report(u)
		if err != nil {
			return nil, fmt.Errorf("extract facts: %w", err)
		}
		facts, verr := s.parseFacts(out, nExisting)
		if verr == nil {
			return facts, nil
		}
		lastErr = verr
		s.log.Warn("memory: extraction output invalid", "attempt", attempt+1, "err", verr)
		user = prompt + "\n\nYour previous answer was rejected: " + verr.Error() + ". Answer again with the JSON array only."
	}
	return nil, fmt.Errorf("%w: %v", ErrBadExtraction, lastErr)
}

// parseFacts validates the model's answer: a JSON array (optionally in a ```json fence) of
// facts with known fields only, non-empty short text, a known kind, importance in [0, 1], a
// supersedes number naming a listed memory, and a ttl only on ephemeral facts.
func (s *Service) parseFacts(out string, nExisting int) ([]fact, error) {
	out = strings.TrimSpace(out)
	if strings.HasPrefix(out, "```") {
		out = strings.TrimPrefix(out, "```json")
		out = strings.TrimPrefix(out, "```")
		out = strings.TrimSuffix(strings.TrimSpace(out), "```")
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(out)))
	dec.DisallowUnknownFields()
	var facts []fact
	if err := dec.Decode(&facts); err != nil {
		return nil, fmt.Errorf("not a JSON array of facts: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("extra text after the JSON array")
	}
	if len(facts) > s.cfg.MaxFacts {
		facts = facts[:s.cfg.MaxFacts]
	}
	for i := range facts {
		f := &facts[i]
		f.Text = strings.TrimSpace(f.Text)
		f.Kind = strings.ToLower(strings.TrimSpace(f.Kind))
		switch {
		case f.Text == "":
			return nil, fmt.Errorf("item %d: text is empty", i+1)
		case len(f.Text) > s.cfg.MaxMemoryChars:
			return nil, fmt.Errorf("item %d: text is longer than %d characters", i+1, s.cfg.MaxMemoryChars)
		case f.Kind != memrec.KindFact && f.Kind != memrec.KindPreference && f.Kind != memrec.KindEphemeral && f.Kind != memrec.KindNote:
			return nil, fmt.Errorf("item %d: kind %q is not fact, preference, ephemeral or note", i+1, f.Kind)
		case f.Importance != nil && (*f.Importance < 0 || *f.Importance > 1):
			return nil, fmt.Errorf("item %d: importance %v is not between 0 and 1", i+1, *f.Importance)
		case f.Supersedes < 0 || f.Supersedes > nExisting:
			return nil, fmt.Errorf("item %d: supersedes %d names no listed existing memory (1 to %d)", i+1, f.Supersedes, nExisting)
		}
		if f.Kind == memrec.KindEphemeral && f.TTL == "" {
			f.TTL = "72h"
		}
		if f.TTL != "" {
			if f.Kind != memrec.KindEphemeral {
				return nil, fmt.Errorf("item %d: ttl is only for kind ephemeral", i+1)
			}
			if _, err := parseTTL(f.TTL); err != nil {
				return nil, fmt.Errorf("item %d: %v", i+1, err)
			}
		}
	}
	return facts, nil
}

// parseTTL parses "72h", "30m" or "14d" (at most a year).
func parseTTL(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		days, err = strconv.Atoi(n)
		d = time.Duration(days) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 || d > 366*24*time.Hour {
		return 0, fmt.Errorf("ttl %q is not a duration like 72h or 14d (at most a year)", s)
	}
	return d, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
