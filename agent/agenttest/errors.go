package agenttest

import "errors"

// ErrScriptExhausted is returned (wrapped) by ScriptedModel.Generate when it is called more often
// than its script has steps and no default step is set.
var ErrScriptExhausted = errors.New("agenttest: script exhausted")
