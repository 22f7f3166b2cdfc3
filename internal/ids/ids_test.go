package ids

import (
	"strings"
	"testing"
)

func TestNewUniqueAndOrdered(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for i := 0; i < 1000; i++ {
		id := New("t_")
		if !strings.HasPrefix(id, "t_") || len(id) != 2+26 {
			t.Fatalf("New = %q, want t_ + 26 hex chars", id)
		}
		if seen[id] {
			t.Fatalf("New returned %q twice", id)
		}
		seen[id] = true
		if prev != "" && id[:12] < prev[:12] {
			t.Fatalf("time prefix went backwards: %q after %q", id, prev)
		}
		prev = id
	}
}
