package memory

import (
	"strings"
	"testing"
	"time"

	"github.com/echogate/echogate/internal/memrec"
)

func TestParseFacts(t *testing.T) {
	s := &Service{cfg: Config{}.withDefaults()}
	for name, tt := range map[string]struct {
		out     string
		want    int    // facts
		wantErr string // substring
	}{
		"empty array":    {`[]`, 0, ""},
		"one fact":       {`[{"text":"Favourite editor is Helix","kind":"preference","importance":0.7}]`, 1, ""},
		"fenced":         {"```json\n[{\"text\":\"Likes tea\",\"kind\":\"preference\"}]\n```", 1, ""},
		"supersedes ok":  {`[{"text":"Uses Zed","kind":"preference","supersedes":2}]`, 1, ""},
		"ephemeral ttl":  {`[{"text":"On holiday","kind":"ephemeral","ttl":"14d"}]`, 1, ""},
		"prose":          {`Sure! Here are the facts: []`, 0, "not a JSON array"},
		"object":         {`{"text":"x"}`, 0, "not a JSON array"},
		"unknown field":  {`[{"text":"x","kind":"fact","confidence":1}]`, 0, "confidence"},
		"empty text":     {`[{"text":" ","kind":"fact"}]`, 0, "text is empty"},
		"bad kind":       {`[{"text":"x","kind":"opinion"}]`, 0, "kind"},
		"bad importance": {`[{"text":"x","kind":"fact","importance":3}]`, 0, "importance"},
		"bad supersedes": {`[{"text":"x","kind":"fact","supersedes":9}]`, 0, "supersedes"},
		"ttl on a fact":  {`[{"text":"x","kind":"fact","ttl":"3d"}]`, 0, "ttl"},
		"bad ttl":        {`[{"text":"x","kind":"ephemeral","ttl":"soon"}]`, 0, "ttl"},
		"trailing text":  {`[] and more`, 0, "extra text"},
		"too long":       {`[{"text":"` + strings.Repeat("a", 600) + `","kind":"fact"}]`, 0, "longer"},
	} {
		facts, err := s.parseFacts(tt.out, 3)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: parseFacts = %v, want an error containing %q", name, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || len(facts) != tt.want):
			t.Errorf("%s: parseFacts = %d facts, %v; want %d, nil", name, len(facts), err, tt.want)
		}
	}
}

func TestEphemeralDefaultTTL(t *testing.T) {
	s := &Service{cfg: Config{}.withDefaults()}
	facts, err := s.parseFacts(`[{"text":"Is at a conference","kind":"ephemeral"}]`, 0)
	if err != nil || facts[0].TTL != "72h" {
		t.Errorf("parseFacts(ephemeral without ttl) = %+v, %v; want ttl 72h", facts, err)
	}
	if d, err := parseTTL("14d"); err != nil || d != 14*24*time.Hour {
		t.Errorf("parseTTL(14d) = %v, %v", d, err)
	}
}

func TestFuse(t *testing.T) {
	order, score := memrec.Fuse([]string{"a", "b", "c"}, []string{"c", "d"})
	if got := strings.Join(order, ","); got != "c,a,b,d" {
		t.Errorf("Fuse order = %s, want c,a,b,d (in both lists first)", got)
	}
	if score["c"] <= score["a"] {
		t.Errorf("Fuse scores = %v, want c above a", score)
	}
}

func TestNearDuplicate(t *testing.T) {
	ex := []memrec.ScoredMemory{
		{Memory: memrec.Memory{ID: "1", Text: "Likes tea", Embedding: []float32{1, 0}, EmbedModel: "e:new@2"}},
		{Memory: memrec.Memory{ID: "2", Text: "Uses Helix", Embedding: []float32{0, 1}, EmbedModel: "e:new@2"}},
		{Memory: memrec.Memory{ID: "3", Text: "Walks a dog", Embedding: []float32{-1, 0}, EmbedModel: "demo:hash@2"}},
	}
	current := func(m memrec.Memory) bool { return m.EmbedModel == "e:new@2" }
	for name, tt := range map[string]struct {
		text string
		v    []float32
		want string
	}{
		"same text":       {"likes tea", nil, "1"},
		"close vector":    {"Enjoys tea", []float32{0.99, 0.05}, "1"},
		"far vector":      {"Drives a bus", []float32{0.7, 0.7}, ""},
		"superseded skip": {"Uses Helix", nil, ""},
		// The demo vector of 3 is identical, but another embedder's: only its words count.
		"stale vector":      {"Has a pet", []float32{-1, 0}, ""},
		"stale, same words": {"walks a dog", []float32{-1, 0}, "3"},
	} {
		m, ok := nearDuplicate(ex, map[string]bool{"2": true}, tt.text, tt.v, 0.9, current)
		got := ""
		if ok {
			got = m.ID
		}
		if got != tt.want {
			t.Errorf("%s: nearDuplicate = %q, want %q", name, got, tt.want)
		}
	}
}
