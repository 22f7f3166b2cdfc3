//go:build race

package web

// raceEnabled: the race detector enlarges stack frames.
const raceEnabled = true
