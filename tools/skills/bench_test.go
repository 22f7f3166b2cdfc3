package skills

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCatalogue renders the catalogue of 100 skills for an agent with two globs (once
// per turn, in the system prompt).
func BenchmarkCatalogue(b *testing.B) {
	dir := b.TempDir()
	for i := range 100 {
		writeSkill(b, dir, fmt.Sprintf("skill-%03d", i), "body", nil)
	}
	set := mustScan(b, dir)
	allow := []string{"skill-0*", "skill-05?"}
	b.ReportAllocs()
	for b.Loop() {
		if Catalogue(set, allow) == "" {
			b.Fatal("empty catalogue")
		}
	}
}

// BenchmarkLoad scans and hashes 50 skills of 4 files each (start and reload).
func BenchmarkLoad(b *testing.B) {
	dir := b.TempDir()
	for i := range 50 {
		writeSkill(b, dir, fmt.Sprintf("skill-%03d", i), strings.Repeat("Step.\n", 200), map[string]string{
			"references/a.md": strings.Repeat("ref ", 2000),
			"references/b.md": strings.Repeat("ref ", 500),
			"scripts/run.sh":  "#!/bin/sh\necho hi\n",
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		set, ps := Load(Config{Dirs: []string{dir}})
		if len(ps) > 0 || len(set.Skills()) != 50 {
			b.Fatalf("Load = %d skills, %v", len(set.Skills()), ps)
		}
	}
}
