package knowledge

import (
	"strings"
	"testing"

	"github.com/echogate/echogate/internal/memrec"
)

// TestRenderPassageHeadingOnce: the heading path is written after the title without the title
// again (a Markdown file's "# Deploying" is both).
func TestRenderPassageHeadingOnce(t *testing.T) {
	for _, tt := range []struct {
		title, heading, want string
	}{
		{"Deploying", "Deploying › Rollback", "Deploying › Rollback ("},
		{"Deploying", "Deploying", "Deploying ("},
		{"Deploying", "Install › Linux", "Deploying › Install › Linux ("},
		{"notes.txt", "", "notes.txt ("},
	} {
		got := RenderPassage(memrec.Passage{Title: tt.title, Heading: tt.heading, Text: "x"})
		if !strings.Contains(got, "] "+tt.want) {
			t.Errorf("RenderPassage(title %q, heading %q) = %q, want %q", tt.title, tt.heading, got, tt.want)
		}
	}
}
