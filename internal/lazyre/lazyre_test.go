package lazyre

import (
	"sync"
	"testing"
)

func TestCompilesOnceAtFirstUse(t *testing.T) {
	r := New(`<@([UW][A-Z0-9]+)>`)
	if r.re != nil {
		t.Fatal("New compiled the expression; want it compiled at first use")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.MatchString("hi <@U123>") }()
	}
	wg.Wait()
	first := r.Re()
	for _, tt := range []struct {
		got, want any
	}{
		{r.MatchString("hi <@U123>"), true},
		{r.FindString("a <@W9> b"), "<@W9>"},
		{len(r.FindStringSubmatch("<@U1>")), 2},
		{len(r.FindAllStringIndex("<@U1> <@U2>", -1)), 2},
		{len(r.FindAllStringSubmatch("<@U1> <@U2>", -1)), 2},
		{len(r.FindAllSubmatch([]byte("<@U1>"), -1)), 1},
		{r.ReplaceAllString("<@U1>!", "@$1"), "@U1!"},
		{r.ReplaceAllStringFunc("<@U1>", func(string) string { return "x" }), "x"},
		{r.String(), `<@([UW][A-Z0-9]+)>`},
		{r.Re() == first, true},
	} {
		if tt.got != tt.want {
			t.Errorf("got %v, want %v", tt.got, tt.want)
		}
	}
}

func TestInvalidPanicsAtFirstUse(t *testing.T) {
	r := New(`(`)
	defer func() {
		if recover() == nil {
			t.Error("MatchString on an invalid expression did not panic")
		}
	}()
	r.MatchString("x")
}
