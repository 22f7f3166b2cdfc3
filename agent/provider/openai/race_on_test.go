//go:build race

package openai

// raceEnabled: sync.Pool drops items at random under the race detector.
const raceEnabled = true
