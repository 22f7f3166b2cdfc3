package main

import "testing"

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0": 0, "1048576": 1 << 20, "20MiB": 20 << 20, "512KiB": 512 << 10, "5MB": 5_000_000, "1.5 GiB": 3 << 29, "64k": 64 << 10, "100b": 100} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "lots", "20 parsecs", "1e30"} {
		if _, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q) = nil error, want one naming the expected form", in)
		}
	}
}

func TestVisionFunc(t *testing.T) {
	cfg := &Config{}
	cfg.Models.Default = "llama3.1:8b"
	if v := visionFunc(cfg); v("llama3.1:8b") || !v("gpt-4o") {
		t.Errorf("default list: llama3.1 = %v, gpt-4o = %v, want false, true", v("llama3.1:8b"), v("gpt-4o"))
	}
	cfg.Models.Vision = []string{"My-Model"}
	if v := visionFunc(cfg); !v("my-model") || v("gpt-4o") {
		t.Errorf("models.vision [My-Model]: my-model = %v, gpt-4o = %v, want true, false", v("my-model"), v("gpt-4o"))
	}
	cfg.Models.Vision = nil
	cfg.Models.Routes = []RouteConfig{{When: "attachments", Model: "gpt-4o"}}
	if v := visionFunc(cfg); !v("llama3.1:8b") {
		t.Error("an attachments route to gpt-4o: turns on the default model must get images")
	}
}
