package echogate

// The words an HTTP client (the web chat, the console) decides an approval with, and the
// canonical reaction each one stands for: a decision by word is the same event as the reaction
// on the approval prompt.
const (
	DecisionApprove        = "approve"
	DecisionApproveSession = "approve_session"
	DecisionDeny           = "deny"
)

// DecisionWords lists the decision words for error messages, in the order people see them.
const DecisionWords = DecisionApprove + ", " + DecisionApproveSession + ", " + DecisionDeny

// DecisionReaction returns the canonical reaction of an approval decision word; ok is false for
// any other word (they are case-sensitive, as the API documents them).
func DecisionReaction(word string) (reaction string, ok bool) {
	switch word {
	case DecisionApprove:
		return ReactionApprove, true
	case DecisionApproveSession:
		return ReactionApproveSession, true
	case DecisionDeny:
		return ReactionDeny, true
	}
	return "", false
}
