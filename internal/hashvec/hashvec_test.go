package hashvec

import (
	"math"
	"testing"
)

func cos(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestEmbed(t *testing.T) {
	a, b, c := Embed("my favourite editor is Helix", 256), Embed("which editor do I like? Helix", 256), Embed("the weather in Oslo", 256)
	if n := cos(a, a); math.Abs(n-1) > 1e-5 {
		t.Errorf("|a|² = %g, want 1", n)
	}
	if cos(a, b) <= cos(a, c) {
		t.Errorf("cos(shared words) = %g <= cos(unrelated) = %g", cos(a, b), cos(a, c))
	}
	if x, y := Embed("same", 8), Embed("same", 8); cos(x, y) < 0.99999 {
		t.Error("Embed is not deterministic")
	}
	if len(Embed("x", 0)) != 1536 {
		t.Error("dims 0 should mean 1536")
	}
}
