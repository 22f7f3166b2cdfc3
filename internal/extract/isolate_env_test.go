package extract

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
)

// Issue 36, finding 11: the PDF child inherited every secret in the environment. A real child,
// asked to report what it sees, gets PATH and its own flag only.
func TestPDFChildGetsNoSecrets(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-child-must-not-see")
	t.Setenv("OPENAI_API_KEY", "sk-child-must-not-see")
	doc, err := runChild(context.Background(), childRequest{Label: "env", Deadline: ChildTimeout, ReportEnv: true})
	if err != nil {
		t.Fatalf("runChild(report env) = %v", err)
	}
	got := strings.Split(doc.Text, "\n")
	slices.Sort(got)
	want := []string{childEnv + "=1", "PATH=" + os.Getenv("PATH")}
	if !slices.Equal(got, want) {
		t.Fatalf("PDF child environment = %q, want %q", got, want)
	}
}
