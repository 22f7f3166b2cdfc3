package admin

import (
	"net/http"

	"github.com/echogate/echogate/channels/web"
)

// putBudgets changes the spend limits without a restart: PUT /api/budgets with the limits in USD
// (0 means no limit). Fields left out keep their current value. The change is this process's;
// with several replicas, send it to each (or set budgets.* in the config and restart).
func (a *API) putBudgets(w http.ResponseWriter, r *http.Request) {
	tr := a.Budget
	if tr == nil {
		WriteError(w, http.StatusNotFound, "budgets are not available in this gateway")
		return
	}
	lim := tr.Limits()
	if !web.ReadMutation(w, r, http.MethodPut, 1<<16, &lim,
		`per_turn_usd, per_session_usd, per_user_day_usd, per_channel_day_usd, per_day_usd and per_month_usd (e.g. {"per_user_day_usd": 5, "per_day_usd": 50})`) {
		return
	}
	if err := tr.SetLimits(lim); err != nil {
		WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	a.Log.Info("budgets changed through the admin API", "limits", lim)
	WriteJSON(w, tr.Limits(), nil)
}
