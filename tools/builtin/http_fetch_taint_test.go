package builtin

import "testing"

// http_fetch says it fetches: the approval gate then asks for it when the turn's input carries
// other authors' text or fetched content (issue 36), unless its policy is an explicit allow.
func TestHTTPFetchSaysItFetches(t *testing.T) {
	tool, err := NewHTTPFetch(HTTPFetchConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if s := tool.Spec(); !s.Fetches {
		t.Errorf("http_fetch Spec().Fetches = false, want true")
	}
}
