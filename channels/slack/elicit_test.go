package slack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/echogate/echogate"
)

func TestPressedReaction(t *testing.T) {
	for id, want := range map[string]string{
		"echogate_approve":                echogate.ReactionApprove,
		"echogate_deny":                   echogate.ReactionDeny,
		"echogate_choice:elicit:v1":       "elicit:v1",
		"echogate_choice:elicit:decline":  "elicit:decline",
		"echogate_choice:":                "",
		"someone_elses_button":            "",
		"echogate_choicex:elicit:decline": "",
	} {
		got, ok := pressedReaction(id)
		if got != want || ok != (want != "") {
			t.Errorf("pressedReaction(%q) = %q, %v, want %q", id, got, ok, want)
		}
	}
}

// TestQuestionButtons: a question's choices become a Block Kit actions block on its last
// message, each button's action id carrying the choice's value.
func TestQuestionButtons(t *testing.T) {
	msgs := withChoices(render("Which size?"), []echogate.Choice{{Value: "elicit:v0", Label: "small"}, {Value: "elicit:decline", Label: "Decline"}})
	b, err := json.Marshal(msgs[len(msgs)-1].blocks)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"block_id":"echogate_choice"`, `"action_id":"echogate_choice:elicit:v0"`, `"text":"small"`, `"action_id":"echogate_choice:elicit:decline"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("blocks = %s, want %s", b, want)
		}
	}
	if got := withChoices(render("plain"), nil); len(got[0].blocks) != len(render("plain")[0].blocks) {
		t.Errorf("withChoices without choices changed the message: %+v", got)
	}
}
