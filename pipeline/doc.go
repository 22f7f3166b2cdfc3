// Package pipeline turns inbound events into answered turns. A Dispatcher dedupes events and
// feeds one bounded mailbox per session (one turn at a time per session, sessions fully
// concurrent); each turn is a Turn that passes three Stages in order: the ContextStage
// (history, system prompt, context sections), the InferenceStage (agent.Run; the ApprovalGate
// and tool execution live in its files) and the ResponseStage (post the outcome, write the
// turn's end). Metrics and tracing wrap the stages as decorators (stages.go).
//
// A turn's lifecycle is a State (state.go): one Transition function decides which moves are
// legal, and the turn events users see follow from the transitions. A move it refuses fails the
// turn (Turn.refuse: counted, logged with the turn id, answered with the fallback text,
// recorded failed); the package's tests fail on any refusal they did not provoke. What
// recovery needs is durable in the store's TurnLog before the effect it guards (store.go);
// recovery.go finishes, at start, what a crash interrupted, from the last durable state.
//
// The pipeline talks to platforms only through the Replier interface and the Caps read from
// it once; it never imports channels. The other dependencies' optional capabilities (the
// Compactor's, a Budget's, a context provider's kind and versioning, a stream's PostNotifier)
// are read the same way, once where the dependency enters, into the records of caps.go
// (TestCapabilitiesAreReadOnlyInCapsFiles).
//
// # Concurrency
//
//   - Pipeline.Run owns every goroutine the pipeline starts: one worker per busy mailbox
//     (counted, drained on shutdown within Config.DrainTimeout, then cancelled) and the
//     janitor. Mailboxes live in a sharded map; there is no lock shared by all sessions.
//   - A Turn is driven by its mailbox's worker goroutine. The agent loop calls the turn's
//     Emit, Authorize, ExecuteTool and ReportUsage from tool goroutines too: the Lifecycle,
//     the usage ledger, the grant cache and the responder guard themselves; everything else
//     in a Turn is written only by the worker.
//   - Background writes of a turn (its record, usage entries) are goroutines bounded by
//     stageTimeout, waited for before the turn's end is written (started, usage.inFlight);
//     its question is written by the first that needs it durable (a tool run, the next model
//     call, a timer), on that goroutine, else with the turn's end (start.go).
//   - A stop sets the turn's stopping flag and cancels its context; the ResponseStage, the
//     stream and async usage writes run on the turn's context without its cancellation
//     (context.WithoutCancel) and a bound of their own, so a stopped turn is still answered and
//     recorded, and the turn's values (span, logger) reach them. No turn path starts from
//     context.Background(); per-turn values are fields of the Turn or of its turnCtl, never
//     context values (TestNoDetachedContextsOrContextValuesOnTurnPaths).
//   - Every queue has a bound: Config.MailboxSize events per session (ErrMailboxFull beyond).
package pipeline
