package channeltest

import (
	"strings"
	"testing"

	"github.com/echogate/echogate/channels"
)

// Findings renders a connection check's findings as "name:ok|skip|fail" joined by spaces, the
// form the adapters' check tests compare.
func Findings(fs []channels.Finding) string {
	var b []string
	for _, f := range fs {
		state := "fail"
		switch {
		case f.Skipped:
			state = "skip"
		case f.OK:
			state = "ok"
		}
		b = append(b, f.Name+":"+state)
	}
	return strings.Join(b, " ")
}

// CheckFindings fails t when fs is not want (in Findings' form), when a failed finding has no
// fix, or when no finding's detail or fix says say.
func CheckFindings(t *testing.T, fs []channels.Finding, want, say string) {
	t.Helper()
	if got := Findings(fs); got != want {
		t.Errorf("Check = %s, want %s (%+v)", got, want, fs)
	}
	var all strings.Builder
	for _, f := range fs {
		all.WriteString(f.Detail + " " + f.Fix + "\n")
		if !f.OK && !f.Skipped && f.Fix == "" {
			t.Errorf("finding %s fails without a fix: %+v", f.Name, f)
		}
	}
	if !strings.Contains(all.String(), say) {
		t.Errorf("Check's details = %q, want them to say %q", all.String(), say)
	}
}
