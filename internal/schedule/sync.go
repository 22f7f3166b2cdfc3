package schedule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/echogate/echogate"
)

// SyncConfigJobs makes the store's config jobs those of the config (`schedules:`), at start
// and on every hot reload: each is validated and put (a job whose spec is unchanged keeps its
// cursor, failures and pause), and a config job no longer in the config is deleted. A
// one-shot `at` already stored under the same spec is accepted though its time has passed
// (it ran, or catch-up decides). Pass only the enabled jobs: one left out (removed, or
// `enabled: false`) is deleted with its runs, and enabled again it starts at its next slot,
// with no catch-up of the time it was off. A pause (max_failures, `pause`) survives a sync;
// `resume` clears it. It returns every problem, each naming the job.
func SyncConfigJobs(ctx context.Context, st JobStore, jobs []Job, lim Limits, now time.Time) error {
	var errs []error
	keep := map[string]bool{}
	for _, j := range jobs {
		j.ID, j.Owner = ConfigID(j.Name), ConfigOwner
		keep[j.ID] = true
		ref := now
		old, err := st.GetJob(ctx, j.ID)
		switch {
		case err == nil && old.Spec.Key() == j.Spec.Key():
			// The store keeps the stored cursor (PutConfigJob); a stored one-shot may be past.
			ref, j.Next = time.Time{}, now
		case err != nil && !errors.Is(err, echogate.ErrNotFound):
			return fmt.Errorf("schedule: sync config job %s: %w", j.Name, err)
		default:
			j.Next = time.Time{} // CheckJob computes the first slot after now
		}
		cj, err := CheckJob(j, lim, ref)
		if err != nil {
			errs = append(errs, fmt.Errorf("schedules: %s: %w", j.Name, err))
			continue
		}
		if err := st.PutConfigJob(ctx, cj); err != nil {
			return fmt.Errorf("schedule: sync config job %s: %w", j.Name, err)
		}
	}
	stored, err := st.ListJobs(ctx, ConfigOwner)
	if err != nil {
		return fmt.Errorf("schedule: sync config jobs: %w", err)
	}
	for _, j := range stored {
		if !keep[j.ID] && strings.HasPrefix(j.ID, "config:") {
			if err := st.DeleteJob(ctx, j.ID); err != nil && !errors.Is(err, echogate.ErrNotFound) {
				return fmt.Errorf("schedule: remove config job %s: %w", j.Name, err)
			}
		}
	}
	return errors.Join(errs...)
}
