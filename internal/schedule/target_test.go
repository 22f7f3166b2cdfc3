package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]Target{
		"slack:C0123":                         {Platform: "slack", Channel: "C0123"},
		"slack:C0123/1700000000.000100":       {Platform: "slack", Channel: "C0123", Thread: "1700000000.000100"},
		"slack:dm:U42":                        {Platform: "slack", DMUser: "U42"},
		"discord:112233":                      {Platform: "discord", Channel: "112233"},
		"discord:dm:998877":                   {Platform: "discord", DMUser: "998877"},
		"web:abc-session":                     {Platform: "web", Channel: "abc-session"},
		"webhook:https://hooks.example/x?y=1": {Platform: "webhook", Webhook: "https://hooks.example/x?y=1"},
	} {
		if got, err := ParseTarget(in); err != nil || got != want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "C0123", "slack:", "slack:dm:", "discord:1/2", "teams:C1", "webhook:http://hooks.example/x", "webhook:https://u:p@hooks.example/", "slack:C1 C2", "slack:dm:ann", "slack:dm:u42", "slack:dm:U42/1", "discord:dm:ann", "discord:dm:1:2", "discord:dm:123456789012345678901"} {
		if _, err := ParseTarget(in); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "deliver") {
			t.Errorf("ParseTarget(%q) = %v, want ErrInvalid naming deliver", in, err)
		}
	}
}

func TestSessionKey(t *testing.T) {
	slot := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	iso, shared := Job{ID: "j", Session: "isolated"}, Job{ID: "j", Session: "shared"}
	if a, b := SessionKey(iso, slot), SessionKey(iso, slot.Add(time.Minute)); a == b {
		t.Errorf("isolated runs share session %q", a)
	}
	if a, b := SessionKey(shared, slot), SessionKey(shared, slot.Add(time.Minute)); a != b {
		t.Errorf("shared runs have sessions %q and %q, want one", a, b)
	}
}
