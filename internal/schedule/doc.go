// Package schedule is scheduled work's core: a job's timing (five-field cron in an IANA time
// zone, a fixed `every`, a one-shot `at`), its validation against the scheduler's limits, the
// next slot after an instant (wall-clock correct across DST), the catch-up decision after
// downtime, the back-off after consecutive failures, the durable records of jobs and slot runs
// with the store contract that storage/sqlite and storage/postgres implement, and the Worker
// that claims due slots through that store and hands each to a Submit function as a Trigger.
//
// It imports the standard library and robfig/cron/v3's parser only, so the composition root,
// the pipeline (the `schedule` tool) and the stores can all use it. Time is always injected:
// nothing here reads the wall clock except through a Clock.
//
// # Exactly once per slot
//
// A slot is a (job, scheduled instant) pair. The Worker claims it with Store.ClaimSlot, which
// records the claim and moves the job's cursor (its next slot) in one transaction, and fails
// for every later caller: one replica runs it. The claim names the slot's event key
// (Trigger.EventKey); Submit hands it to the dispatcher, whose event dedupe makes a second
// submission of the same key a no-op. After Submit returns, MarkSubmitted records it; from then
// on the run is a turn like any other, recovered by the turn log. A claim left unsubmitted (the
// process died between claim and submit) is taken over by ReclaimStale after StaleAfter, by
// exactly one replica, and submitted again under the same key: recovery reads the store, it
// never guesses.
package schedule
