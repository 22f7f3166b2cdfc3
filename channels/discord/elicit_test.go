package discord

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/echogate/echogate"
)

func TestPressedReaction(t *testing.T) {
	for id, want := range map[string]string{
		"echogate_approve":               echogate.ReactionApprove,
		"echogate_choice:elicit:v1":      "elicit:v1",
		"echogate_choice:elicit:decline": "elicit:decline",
		"echogate_choice:":               "",
		"other":                          "",
	} {
		got, ok := pressedReaction(id)
		if got != want || ok != (want != "") {
			t.Errorf("pressedReaction(%q) = %q, %v, want %q", id, got, ok, want)
		}
	}
}

// TestQuestionComponents: a question's choices become action rows of at most five buttons whose
// custom ids carry the choices' values; one whose id would pass 100 characters is left out.
func TestQuestionComponents(t *testing.T) {
	choices := []echogate.Choice{{Value: strings.Repeat("x", 120), Label: "too long"}}
	for _, v := range []string{"v0", "v1", "v2", "v3", "v4", "decline"} {
		choices = append(choices, echogate.Choice{Value: "elicit:" + v, Label: v})
	}
	b, _ := json.Marshal(choiceComponents(choices))
	var rows []struct {
		Type       int `json:"type"`
		Components []struct {
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		if r.Type != 1 || len(r.Components) > 5 {
			t.Errorf("row = %+v, want an action row of at most 5 buttons", r)
		}
		var ids []string
		for _, c := range r.Components {
			ids = append(ids, strings.TrimPrefix(c.CustomID, "echogate_choice:elicit:"))
		}
		got = append(got, strings.Join(ids, ","))
	}
	if want := "v0,v1,v2,v3,v4|decline"; strings.Join(got, "|") != want {
		t.Errorf("rows = %s, want %s", strings.Join(got, "|"), want)
	}
}
