package main

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools"
	"github.com/echogate/echogate/tools/builtin"
)

// FilesConf is the `files:` section: chat attachments (Slack files, Discord attachments).
type FilesConf struct {
	// MaxBytes is the largest file read_file downloads; default 20MiB.
	MaxBytes ByteSize `yaml:"max_bytes"`
	// MaxPages is how many PDF pages one read_file call reads; default 50.
	MaxPages int `yaml:"max_pages"`
	// MaxChars caps the text one read_file call returns; default 40000.
	MaxChars int `yaml:"max_chars"`
	// ImageMaxBytes is the largest image sent to a vision-capable model; default 5MiB.
	ImageMaxBytes ByteSize `yaml:"image_max_bytes"`
}

// ByteSize is a size written as a number of bytes or with a unit: 512KiB, 20MiB, 5MB, 1GiB.
type ByteSize int64

func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseByteSize(n.Value)
	if err != nil {
		return err
	}
	*b = ByteSize(v)
	return nil
}

func (b ByteSize) MarshalYAML() (any, error) { return int64(b), nil }

func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" || t == "0" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
		{"kb", 1000}, {"mb", 1000 * 1000}, {"gb", 1000 * 1000 * 1000},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1},
	}
	lower := strings.ToLower(t)
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(lower, u.suffix) {
			lower, mult = strings.TrimSpace(strings.TrimSuffix(lower, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(lower, 64)
	if err != nil || v < 0 || v*float64(mult) > 1<<50 {
		return 0, fmt.Errorf("%q is not a size: write it like 20MiB, 512KiB or 1048576 (bytes)", s)
	}
	return int64(v * float64(mult)), nil
}

// visionFunc says which models get images: models.vision when set (exact names), else
// pipeline.DefaultVision's list of vision-capable families. When an `attachments` route sends
// turns with files to another model, that model decides for turns on the default model.
func visionFunc(cfg *Config) func(model string) bool {
	capable := pipeline.DefaultVision
	if cfg.Models.Vision != nil {
		set := map[string]bool{}
		for _, m := range cfg.Models.Vision {
			set[strings.ToLower(strings.TrimSpace(m))] = true
		}
		capable = func(model string) bool { return set[strings.ToLower(model)] }
	}
	routed := ""
	for _, r := range cfg.Models.Routes {
		if r.When == "attachments" && r.Model != "" {
			routed = r.Model
			break
		}
	}
	return func(model string) bool {
		if routed != "" && model == cfg.Models.Default {
			return capable(routed)
		}
		return capable(model)
	}
}

// wireFiles gives the pipeline its attachment service and registers read_file over it.
func (c *core) wireFiles(deps *pipeline.Deps, repliers map[string]pipeline.Replier) error {
	fc := c.cfg.Files
	if fc.MaxPages < 0 {
		return &ConfigError{Key: "files.max_pages", Msg: fmt.Sprintf("%d is negative: use a positive number or 0 for the default 50", fc.MaxPages)}
	}
	if fc.MaxChars < 0 {
		return &ConfigError{Key: "files.max_chars", Msg: fmt.Sprintf("%d is negative: use a positive number or 0 for the default 40000", fc.MaxChars)}
	}
	files, err := pipeline.NewFiles(pipeline.FilesConfig{
		MaxBytes: int64(fc.MaxBytes), ImageMaxBytes: int64(fc.ImageMaxBytes), Vision: visionFunc(c.cfg),
	}, c.store, repliers)
	if err != nil {
		return fmt.Errorf("files: %w", err)
	}
	deps.Files = files
	if t, ok := c.cfg.Tools[builtin.ReadFileName]; ok && t.Enabled != nil && !*t.Enabled {
		return nil
	}
	rf, err := builtin.NewReadFile(builtin.ReadFileConfig{MaxBytes: int64(fc.MaxBytes), MaxPages: fc.MaxPages, MaxChars: fc.MaxChars}, files)
	if err != nil {
		return fmt.Errorf("files: %w", err)
	}
	return c.tools.Replace(tools.WithBreaker(rf, tools.BreakerConfig{}, c.log, func(tool, from, to string) {
		c.log.Warn("tool circuit breaker changed state", "tool", tool, "from", from, "to", to)
		c.metrics.Breaker(tool, "tool", to)
	}))
}
