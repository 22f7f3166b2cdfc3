package main

// Reading the configuration: the YAML file, ${VAR} expansion, ECHOGATE_* overrides and the
// OpenAI variables; config.go holds the types and their defaults.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// OpenAI settings that must work with no YAML at all; they fill the first provider.
const (
	envOpenAIKey  = "OPENAI_API_KEY"
	envOpenAIBase = "OPENAI_BASE_URL"
	defaultBase   = "https://api.openai.com/v1"
)

// ConfigError names the key that is wrong and how to fix it.
type ConfigError struct {
	Key   string
	Msg   string
	Where string // "echogate.yaml, line 3" for a YAML mistake; empty otherwise
}

func (e *ConfigError) Error() string {
	if e.Where != "" {
		return "config: " + e.Where + ": " + e.Key + ": " + e.Msg
	}
	return "config: " + e.Key + ": " + e.Msg
}

// loadConfig reads the YAML file (path, or ./echogate.yaml when present, or none), expands
// ${VAR}, applies environment overrides and defaults, and validates. Map sections are set from
// the environment only through loadConfigFrom, which is given the variables' names.
func loadConfig(path string, getenv func(string) string) (*Config, error) {
	return loadConfigFrom(path, getenv, nil)
}

// loadConfigFrom is loadConfig with the environment's list (os.Environ), for the map sections'
// variables (config_envmap.go).
func loadConfigFrom(path string, getenv func(string) string, environ func() []string) (*Config, error) {
	cfg := &Config{}
	explicit := path != ""
	if path == "" {
		path = getenv("ECHOGATE_CONFIG")
		explicit = path != ""
	}
	if path == "" {
		if _, err := os.Stat("echogate.yaml"); err == nil {
			path = "echogate.yaml"
		}
	}
	origins := keyOrigins{file: path, lines: map[string]int{}, env: map[string]string{}}
	var refs []envReference
	referenced := map[string]bool{}
	var stamp fileStamp
	if path != "" {
		stamp = stampOf(path) // before the read: a change during it is seen as a change (reload.go)
		raw, err := os.ReadFile(path)
		if err != nil {
			if explicit {
				return nil, fmt.Errorf("config: read %s: %w (check --config / ECHOGATE_CONFIG)", path, err)
			}
			return nil, fmt.Errorf("config: read %s: %w", path, err)
		}
		expanded, err := expandEnv(raw, getenv)
		if err != nil {
			return nil, fmt.Errorf("config: %s: %w", path, err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(expanded, &doc); err != nil {
			return nil, yamlSyntaxError(path, expanded, err)
		}
		if err := checkYAML(path, &doc); err != nil {
			return nil, err
		}
		indexLines(&doc, "", origins.lines)
		refs = envReferences(raw)
		for _, m := range envRef.FindAllSubmatch(raw, -1) {
			referenced[string(m[1])] = true
		}
		dec := yaml.NewDecoder(bytes.NewReader(expanded))
		dec.KnownFields(true)
		if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("config: %s: %s", path, yamlErrorHint(err))
		}
	}
	var names []string
	if environ != nil {
		names = environ()
	}
	if err := applyEnv(reflect.ValueOf(cfg).Elem(), "ECHOGATE", "", getenv, names, origins.env); err != nil {
		return nil, err
	}
	applyProviderEnv(cfg, getenv, origins.env)
	cfg.dropUnsetProviders()
	cfg.Tracing.getenv = getenv
	cfg.source = configSource{path: path, getenv: getenv, environ: environ, origins: origins, stamp: stamp}
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		return nil, origins.locate(err)
	}
	if names != nil {
		cfg.warnings = append(envTypoWarnings(names, referenced, getenv), emptySecretWarnings(origins, refs, names, getenv)...)
	}
	return cfg, nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandEnv replaces ${VAR} and ${VAR:-default}. A ${VAR} whose variable is unset expands to "".
func expandEnv(raw []byte, getenv func(string) string) ([]byte, error) {
	return envRef.ReplaceAllFunc(raw, func(m []byte) []byte {
		sub := envRef.FindSubmatch(m)
		v := getenv(string(sub[1]))
		if v == "" && len(sub[2]) > 0 {
			v = string(sub[3])
		}
		return []byte(v)
	}), nil
}

func yamlErrorHint(err error) string {
	s := err.Error()
	if strings.Contains(s, "not found in type") {
		re := regexp.MustCompile(`line (\d+): field (\S+) not found`)
		if m := re.FindStringSubmatch(s); m != nil {
			return fmt.Sprintf("line %s: unknown key %q: check its spelling against echogate.example.yaml", m[1], m[2])
		}
	}
	return s + " (see echogate.example.yaml for the expected shape)"
}

// applyEnv overrides scalar fields from the environment: the field's `env` tag, and
// PREFIX_<YAML PATH> in upper case; map sections tagged `envmap` from PREFIX_<PATH>_<NAME>_<KEY>
// (config_envmap.go). It records which variable set which key in set (nil: not recorded).
func applyEnv(v reflect.Value, prefix, path string, getenv func(string) string, environ []string, set map[string]string) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		key, p := prefix+"_"+strings.ToUpper(name), join(path, name)
		fv := v.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(Duration(0)) {
			if err := applyEnv(fv, key, p, getenv, environ, set); err != nil {
				return err
			}
			continue
		}
		if mode, ok := f.Tag.Lookup("envmap"); ok {
			if err := applyEnvMap(fv, key, p, mode, getenv, environ, set); err != nil {
				return err
			}
			continue
		}
		val, envName := "", key
		if tag := f.Tag.Get("env"); tag != "" {
			val, envName = getenv(tag), tag
		}
		if s := getenv(key); s != "" {
			val, envName = s, key
		}
		if val == "" {
			continue
		}
		if err := setScalar(fv, val); err != nil {
			return &ConfigError{Key: envName, Msg: err.Error()}
		}
		if set != nil {
			set[p] = envName
		}
	}
	return nil
}

func setScalar(fv reflect.Value, val string) error {
	switch {
	case fv.Type() == reflect.TypeOf(ByteSize(0)):
		n, err := parseByteSize(val)
		if err != nil {
			return err
		}
		fv.SetInt(n)
	case fv.Type() == reflect.TypeOf(Duration(0)):
		d, err := parseDuration(val)
		if err != nil {
			return err
		}
		fv.SetInt(int64(d))
	case fv.Kind() == reflect.String:
		fv.SetString(val)
	case fv.Kind() == reflect.Int || fv.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", val)
		}
		fv.SetInt(n)
	case fv.Kind() == reflect.Float64:
		n, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", val)
		}
		fv.SetFloat(n)
	case fv.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(val)
		if err != nil {
			return fmt.Errorf("%q is not true or false", val)
		}
		fv.SetBool(b)
	case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Bool:
		b, err := strconv.ParseBool(val)
		if err != nil {
			return fmt.Errorf("%q is not true or false", val)
		}
		fv.Set(reflect.ValueOf(&b))
	case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
		var parts []string
		for _, p := range strings.Split(val, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		fv.Set(reflect.ValueOf(parts))
	default:
		return nil // maps and lists of structs are YAML-only
	}
	return nil
}

func applyProviderEnv(cfg *Config, getenv func(string) string, set map[string]string) {
	key, base := getenv(envOpenAIKey), getenv(envOpenAIBase)
	if len(cfg.Models.Providers) == 0 {
		if key == "" && base == "" {
			return // offline demo model
		}
		cfg.Models.Providers = []ProviderConfig{{Name: "openai"}}
	}
	p := &cfg.Models.Providers[0]
	if key != "" {
		p.APIKey = key
		set["models.providers[0].api_key"] = envOpenAIKey
	}
	if base != "" {
		p.BaseURL = base
		set["models.providers[0].base_url"] = envOpenAIBase
	}
}
