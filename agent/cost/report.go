package cost

import (
	"context"
	"fmt"
	"strings"

	"github.com/echogate/echogate"
)

// Report renders the spend of userID (qualified, "slack:U123") today and this month, of channel
// ("platform:channel", may be empty) today, of session (may be empty) so far, and the limits
// that apply, as Markdown for the /usage chat command. Token counts carry the share of input
// read from the provider's prompt cache. Gateway-wide limits are shown as a percentage used, not as amounts. It reads the
// ledger directly (never the cache) and blocks on a handful of queries; it honours ctx.
func (t *Tracker) Report(ctx context.Context, userID, channel string, session echogate.SessionKey) (string, error) {
	if userID == "" {
		return "", fmt.Errorf("cost: usage report: no user id given")
	}
	lim := t.Limits()
	now := t.cfg.Now()
	day, nextDay, month, nextMonth := t.bounds(now)
	sum := func(what string, f echogate.UsageFilter) (echogate.Usage, error) {
		u, err := t.ledger.SumUsage(ctx, f)
		if err != nil {
			return u, fmt.Errorf("cost: usage report for %s: sum %s: %w", userID, what, err)
		}
		return u, nil
	}
	today, err := sum("today", echogate.UsageFilter{UserID: userID, Since: day, Until: nextDay})
	if err != nil {
		return "", err
	}
	thisMonth, err := sum("this month", echogate.UsageFilter{UserID: userID, Since: month, Until: nextMonth})
	if err != nil {
		return "", err
	}

	var b strings.Builder
	b.WriteString("**Your usage**\n")
	fmt.Fprintf(&b, "- Today: %s (%s)", USD(today.CostUSD), tokens(today))
	if lim.PerUserDayUSD > 0 {
		fmt.Fprintf(&b, " of your %s daily budget; resets %s", USD(lim.PerUserDayUSD), t.resetText(LimitPerUserDay, nextDay, now))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "- This month: %s (%s)\n", USD(thisMonth.CostUSD), tokens(thisMonth))
	if session != "" {
		conv, err := sum("this conversation", echogate.UsageFilter{Session: session})
		if err != nil {
			return "", err
		}
		if conv.InputTokens+conv.OutputTokens > 0 {
			fmt.Fprintf(&b, "- This conversation: %s (%s)\n", USD(conv.CostUSD), tokens(conv))
		}
	}
	if channel != "" && lim.PerChannelDayUSD > 0 {
		ch, err := sum("channel today", echogate.UsageFilter{Channel: channel, Since: day, Until: nextDay})
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "- This channel today: %s of its %s daily budget\n", USD(ch.CostUSD), USD(lim.PerChannelDayUSD))
	}
	if lim.PerTurnUSD > 0 || lim.PerSessionUSD > 0 {
		var parts []string
		if lim.PerTurnUSD > 0 {
			parts = append(parts, USD(lim.PerTurnUSD)+" per turn")
		}
		if lim.PerSessionUSD > 0 {
			parts = append(parts, USD(lim.PerSessionUSD)+" per conversation")
		}
		fmt.Fprintf(&b, "- Limits: %s\n", strings.Join(parts, ", "))
	}
	var gw []string
	if lim.PerDayUSD > 0 {
		u, err := sum("gateway today", echogate.UsageFilter{Since: day, Until: nextDay})
		if err != nil {
			return "", err
		}
		gw = append(gw, fmt.Sprintf("%s of today's budget", percent(u.CostUSD, lim.PerDayUSD)))
	}
	if lim.PerMonthUSD > 0 {
		u, err := sum("gateway this month", echogate.UsageFilter{Since: month, Until: nextMonth})
		if err != nil {
			return "", err
		}
		gw = append(gw, fmt.Sprintf("%s of this month's budget", percent(u.CostUSD, lim.PerMonthUSD)))
	}
	if len(gw) > 0 {
		fmt.Fprintf(&b, "\n**Gateway**: %s used\n", strings.Join(gw, ", "))
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// tokens renders u's token count, with the share of input tokens read from the provider's
// prompt cache when there were any ("12k tokens, 87% of input cached").
func tokens(u echogate.Usage) string {
	s := tokenCount(u.InputTokens+u.OutputTokens) + " tokens"
	if u.CachedInputTokens > 0 && u.InputTokens > 0 {
		s += fmt.Sprintf(", %.0f%% of input cached", 100*float64(min(u.CachedInputTokens, u.InputTokens))/float64(u.InputTokens))
	}
	return s
}

func tokenCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%d", n)
}

func percent(v, of float64) string {
	p := v / of * 100
	if p > 0 && p < 1 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", p)
}
