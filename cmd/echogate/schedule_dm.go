package main

import (
	"context"
	"fmt"

	"github.com/echogate/echogate"
	"github.com/echogate/echogate/internal/schedule"
)

// dmOpener is a platform channel that opens its bot's direct messages with a user (Slack's
// conversations.open, Discord's create DM; channels/*/dm.go), remembering each.
type dmOpener interface {
	OpenDM(ctx context.Context, user string) (echogate.ConversationRef, error)
}

// deliveryPlace is the conversation job j's messages go to: the target's; for slack:dm:<user>
// and discord:dm:<user> the DM its platform's channel opens.
func (s *scheduler) deliveryPlace(ctx context.Context, j schedule.Job, tg schedule.Target) (echogate.ConversationRef, error) {
	if tg.DMUser == "" {
		return deliveryConv(j, tg), nil
	}
	op, ok := s.repliers[tg.Platform].(dmOpener)
	if !ok {
		return echogate.ConversationRef{}, fmt.Errorf("deliver %s: %s is not configured on this gateway, so no DM can be opened", j.Deliver, tg.Platform)
	}
	conv, err := op.OpenDM(ctx, tg.DMUser)
	if err != nil {
		return echogate.ConversationRef{}, fmt.Errorf("deliver %s: %w", j.Deliver, err)
	}
	return conv, nil
}

// placeDM opens the DM of a run whose job delivers to one and puts it in ev. ok is false when
// the run must not be submitted: ctx ended (err; the claim stays for the next start), or the
// DM could not be opened (the run is recorded failed with the platform's reason, err nil).
func (s *scheduler) placeDM(ctx context.Context, t schedule.Trigger, ev *echogate.InboundEvent) (ok bool, err error) {
	tg, err := schedule.ParseTarget(t.Job.Deliver)
	if err != nil || tg.DMUser == "" {
		return err == nil, err
	}
	conv, err := s.deliveryPlace(ctx, t.Job, tg)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		s.record(ctx, t.Job, t.Slot, "", schedule.OutcomeFailed, err.Error())
		return false, nil
	}
	ev.Conversation = conv
	return true, nil
}
