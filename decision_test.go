package echogate

import "testing"

func TestDecisionReaction(t *testing.T) {
	for word, want := range map[string]string{
		"approve":         ReactionApprove,
		"approve_session": ReactionApproveSession,
		"deny":            ReactionDeny,
		"Approve":         "",
		"yes":             "",
		"":                "",
		"stop":            "",
	} {
		got, ok := DecisionReaction(word)
		if got != want || ok != (want != "") {
			t.Errorf("DecisionReaction(%q) = %q, %v, want %q, %v", word, got, ok, want, want != "")
		}
	}
	if DecisionWords != "approve, approve_session, deny" {
		t.Errorf("DecisionWords = %q, want the three words in the order the API documents them", DecisionWords)
	}
}
