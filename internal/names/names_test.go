package names

import (
	"fmt"
	"sync"
	"testing"
)

func TestSetGet(t *testing.T) {
	d := New(3)
	for _, tt := range []struct{ id, name string }{
		{"slack:U1", "ann"}, {"discord:42", " Bob "}, {"slack:U2", ""}, {"", "x"}, {"slack:U3", "U3"}, {"web:eve", "web:eve"},
	} {
		d.Set(tt.id, tt.name)
	}
	for id, want := range map[string]string{"slack:U1": "ann", "discord:42": "Bob", "slack:U2": "", "slack:U3": "", "web:eve": ""} {
		if got, _ := d.Get(id); got != want {
			t.Errorf("Get(%q) = %q, want %q", id, got, want)
		}
	}
	d.Set("slack:U1", "Ann L.")
	if got, _ := d.Get("slack:U1"); got != "Ann L." {
		t.Errorf("Get after rename = %q, want Ann L.", got)
	}
}

func TestBounded(t *testing.T) {
	d := New(2)
	d.Set("a:1", "one")
	d.Set("a:2", "two")
	d.Get("a:1") // a:1 is now the most recent
	d.Set("a:3", "three")
	got := d.Lookup([]string{"a:1", "a:2", "a:3", "a:4"})
	if len(got) != 2 || got["a:1"] != "one" || got["a:3"] != "three" {
		t.Errorf("Lookup = %v, want a:1 and a:3 (a:2 evicted)", got)
	}
	if d.Len() != 2 {
		t.Errorf("Len = %d, want 2", d.Len())
	}
}

func TestConcurrent(t *testing.T) {
	d := New(50)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("slack:U%d", i%80)
				d.Set(id, fmt.Sprintf("n%d-%d", g, i))
				d.Get(id)
			}
		})
	}
	wg.Wait()
	if d.Len() > 50 {
		t.Errorf("Len = %d, want at most 50", d.Len())
	}
}
