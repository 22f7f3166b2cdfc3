// Package hashvec makes deterministic text embeddings without a model: a normalised sum of
// pseudo-random vectors, one per lower-cased word (feature hashing), so texts that share words are
// close in cosine similarity. The offline demo model and the test fakes use it.
package hashvec

import (
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// Embed returns the unit vector of text in dims dimensions (dims <= 0 means 1536).
func Embed(text string, dims int) []float32 {
	if dims <= 0 {
		dims = 1536
	}
	v := make([]float32, dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(words) == 0 {
		words = []string{text}
	}
	for _, w := range words {
		h := fnv.New64a()
		_, _ = h.Write([]byte(w))
		x := h.Sum64()
		for i := range v {
			x = splitmix64(x)
			v[i] += float32(int64(x>>11))/float32(1<<52) - 1
		}
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 {
		v[0] = 1
		return v
	}
	inv := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= inv
	}
	return v
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	z := x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
