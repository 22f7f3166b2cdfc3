package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/echogate/echogate"
)

// GET /api/usage and GET /api/usage/series: the cost ledger, summed.

func (a *API) handleUsage(w http.ResponseWriter, r *http.Request) {
	f := echogate.UsageFilter{Session: echogate.SessionKey(r.URL.Query().Get("session")), UserID: r.URL.Query().Get("user"),
		Turn: r.URL.Query().Get("turn"), Agent: r.URL.Query().Get("agent")}
	if s := r.URL.Query().Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			WriteError(w, http.StatusBadRequest, "since must be an RFC 3339 time, e.g. 2026-11-30T00:00:00Z")
			return
		}
		f.Since = t
	}
	sum, err := a.Store.SumUsage(r.Context(), f)
	if err != nil {
		WriteJSON(w, nil, WrapErr("sum usage", err))
		return
	}
	byAgent, err := a.usageByAgent(r.Context(), f) // agents.go
	if err != nil {
		WriteJSON(w, nil, WrapErr("sum usage by agent", err))
		return
	}
	recs, err := a.Store.ListUsage(r.Context(), f, limitParam(r, 500))
	WriteJSON(w, map[string]any{"total": sum, "by_agent": byAgent, "records": nonNil(recs)}, WrapErr("list usage", err))
}

// maxSeriesDays bounds GET /api/usage/series: one ledger sum per day.
const maxSeriesDays = 366

// UsageDay is one day of the spend series.
type UsageDay struct {
	Day          string  `json:"day"` // YYYY-MM-DD, UTC
	CostUSD      float64 `json:"cost_usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	// CachedInputTokens are the part of InputTokens read from the provider's prompt cache.
	CachedInputTokens int64 `json:"cached_input_tokens"`
}

// UsageSeries is the body of GET /api/usage/series.
type UsageSeries struct {
	Timezone    string         `json:"timezone"`
	From        string         `json:"from"` // first day, inclusive
	To          string         `json:"to"`   // last day (today), inclusive
	Days        []UsageDay     `json:"days"` // oldest first, one entry per day, zero-filled
	Total       echogate.Usage `json:"total"`
	Today       echogate.Usage `json:"today"`
	MonthToDate echogate.Usage `json:"month_to_date"`
}

// usageSummer is the part of the store the series needs.
type usageSummer interface {
	SumUsage(ctx context.Context, f echogate.UsageFilter) (echogate.Usage, error)
}

// seriesOf sums the ledger per UTC day for the `days` days ending today (now's day), plus the
// month to date. It makes days+1 store calls and stops at the first error.
func seriesOf(ctx context.Context, s usageSummer, f echogate.UsageFilter, days int, now time.Time) (UsageSeries, error) {
	now = now.UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	first := today.AddDate(0, 0, -(days - 1))
	out := UsageSeries{Timezone: "UTC", From: first.Format(time.DateOnly), To: today.Format(time.DateOnly), Days: make([]UsageDay, 0, days)}
	for d := first; !d.After(today); d = d.AddDate(0, 0, 1) {
		df := f
		df.Since, df.Until = d, d.AddDate(0, 0, 1)
		u, err := s.SumUsage(ctx, df)
		if err != nil {
			return UsageSeries{}, fmt.Errorf("sum usage of %s: %w", d.Format(time.DateOnly), err)
		}
		out.Days = append(out.Days, UsageDay{Day: d.Format(time.DateOnly), CostUSD: u.CostUSD, InputTokens: u.InputTokens,
			OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens})
		out.Total = addUsage(out.Total, u)
		out.Today = u
	}
	mf := f
	mf.Since = time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC)
	u, err := s.SumUsage(ctx, mf)
	if err != nil {
		return UsageSeries{}, fmt.Errorf("sum usage of the month: %w", err)
	}
	out.MonthToDate = u
	return out, nil
}

func addUsage(a, b echogate.Usage) echogate.Usage {
	a.InputTokens += b.InputTokens
	a.OutputTokens += b.OutputTokens
	a.CachedInputTokens += b.CachedInputTokens
	a.CostUSD += b.CostUSD
	return a
}

func (a *API) handleUsageSeries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	days := 30
	if s := q.Get("days"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxSeriesDays {
			WriteError(w, http.StatusBadRequest, fmt.Sprintf("days %q must be a whole number from 1 to %d, e.g. days=30", s, maxSeriesDays))
			return
		}
		days = n
	}
	f := echogate.UsageFilter{Session: echogate.SessionKey(q.Get("session")), UserID: q.Get("user"), Channel: q.Get("channel"), Agent: q.Get("agent")}
	s, err := seriesOf(r.Context(), a.Store, f, days, a.Now())
	WriteJSON(w, s, WrapErr("usage series", err))
}
