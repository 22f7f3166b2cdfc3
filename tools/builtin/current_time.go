package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // IANA zones also in scratch containers without /usr/share/zoneinfo

	"github.com/echogate/echogate/tools"
)

// CurrentTimeName is the stable name of the current_time tool.
const CurrentTimeName = "current_time"

// CurrentTimeConfig configures current_time. The zero value means defaults.
type CurrentTimeConfig struct {
	// DefaultTimezone is the IANA zone used when the model names none. Default "UTC".
	DefaultTimezone string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

type currentTime struct {
	now  func() time.Time
	def  *time.Location
	spec tools.Spec
}

type timeArgs struct {
	Timezone *string `json:"timezone"`
}

// NewCurrentTime returns the current_time tool (Safe): the current time in RFC 3339 with weekday
// and zone, in an optional IANA zone.
func NewCurrentTime(cfg CurrentTimeConfig) (tools.Tool, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DefaultTimezone == "" {
		cfg.DefaultTimezone = "UTC"
	}
	def, err := loadZone(cfg.DefaultTimezone)
	if err != nil {
		return nil, fmt.Errorf("current_time: default timezone %q: %w (use an IANA name such as Europe/Berlin or UTC)", cfg.DefaultTimezone, err)
	}
	return &currentTime{
		now: cfg.Now,
		def: def,
		spec: tools.Spec{
			Name: CurrentTimeName,
			Description: "Returns the current date and time (RFC 3339), the weekday and the time zone. " +
				"Pass an IANA time zone such as \"Europe/Berlin\" or \"America/New_York\" to get the local time there; " +
				"without one the time is in " + cfg.DefaultTimezone + ".",
			Parameters: json.RawMessage(`{"type":"object","properties":{"timezone":{"type":"string","description":"IANA time zone name, e.g. Europe/Berlin, America/New_York, Asia/Tokyo or UTC","minLength":1,"maxLength":64}},"additionalProperties":false}`),
			Safety:     tools.Safe,
			Shareable:  true, // the time is everyone's
		},
	}, nil
}

func (c *currentTime) Spec() tools.Spec { return c.spec }

// Call returns the time; it does no I/O and never blocks.
func (c *currentTime) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	var args timeArgs
	if res, ok := decodeArgs(CurrentTimeName, raw, &args, `{"timezone": "Europe/Berlin"}`); !ok {
		return res, nil
	}
	loc := c.def
	if args.Timezone != nil {
		name := strings.TrimSpace(*args.Timezone)
		l, err := loadZone(name)
		if err != nil {
			return tools.Errorf("current_time: unknown time zone %q: use an IANA zone name such as \"Europe/Berlin\", \"America/New_York\" or \"UTC\"", *args.Timezone), nil
		}
		loc = l
	}
	now := c.now().In(loc)
	abbr, _ := now.Zone()
	out := struct {
		Time         string `json:"time"`
		Weekday      string `json:"weekday"`
		Timezone     string `json:"timezone"`
		Abbreviation string `json:"abbreviation"`
		UTCOffset    string `json:"utc_offset"`
		Unix         int64  `json:"unix"`
	}{
		Time:         now.Format(time.RFC3339),
		Weekday:      now.Weekday().String(),
		Timezone:     loc.String(),
		Abbreviation: abbr,
		UTCOffset:    now.Format("-07:00"), // ±hh:mm, +00:00 for UTC
		Unix:         now.Unix(),
	}
	b, err := json.Marshal(out)
	if err != nil {
		return tools.Result{}, fmt.Errorf("current_time: encode result: %w", err)
	}
	return tools.Result{Content: string(b)}, nil
}

// loadZone loads an IANA zone, refusing "", "Local" (the server's zone, meaningless to the
// model) and anything that is not a plain zone name.
func loadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" || len(name) > 64 || strings.ContainsAny(name, " \\") {
		return nil, fmt.Errorf("not an IANA time zone name")
	}
	return time.LoadLocation(name)
}
