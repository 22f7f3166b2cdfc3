package pipeline

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
)

// expected is how many refused transitions the tests provoked on purpose (expectRefusals).
var expected atomic.Int64

// expectRefusals declares that t provokes n refused transitions on purpose, and fails t when
// it did not provoke exactly n.
func expectRefusals(t *testing.T, n int64) {
	t.Helper()
	before := refusals.Load()
	expected.Add(n)
	t.Cleanup(func() {
		if got := refusals.Load() - before; got != n {
			t.Errorf("refused turn transitions during %s = %d, want %d", t.Name(), got, n)
		}
	})
}

// TestMain fails the package's tests when any turn transition was refused that a test did not
// provoke on purpose: the state machine guards every turn the tests run (Turn.refuse; the log
// line "pipeline: refused turn transition; the turn fails" names the turn and both states).
func TestMain(m *testing.M) {
	code := m.Run()
	if got, want := refusals.Load(), expected.Load(); got != want {
		fmt.Fprintf(os.Stderr, "FAIL: %d refused turn transitions during the pipeline tests, %d provoked on purpose: "+
			"a stage moved a turn where its lifecycle does not go (see the log lines \"pipeline: refused turn transition\")\n", got, want)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
