package slack

import "github.com/echogate/echogate/internal/clock"

// Clock is the channel's time source (internal/clock's, the project's one). Tests inject a fake;
// the zero Config uses the system clock.
type Clock = clock.Clock

type systemClock = clock.System
