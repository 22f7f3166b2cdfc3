package main

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// checkYAML walks the parsed YAML beside the Config type before decoding, so that every shape
// or type mistake is reported with its key path, its line and the fix, never with a Go type
// name. It also rejects what the YAML decoder would silently accept: a fraction where a whole
// number is expected (2.5 for max_iterations would be truncated to 2).
func checkYAML(file string, doc *yaml.Node) error {
	if doc.Kind == 0 { // an empty file, or one of comments only: the defaults
		return nil
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil
		}
		doc = doc.Content[0]
	}
	if err := checkNode(doc, reflect.TypeOf(Config{}), ""); err != nil {
		if ce, ok := err.(*ConfigError); ok {
			ce.Where = file + ", " + ce.Where
		}
		return err
	}
	return nil
}

var (
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
	durationType    = reflect.TypeOf(Duration(0))
	byteSizeType    = reflect.TypeOf(ByteSize(0))
)

// checkNode checks node n against type t; path is its key path for errors ("" at the top).
func checkNode(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	bad := func(format string, args ...any) error {
		key := path
		if key == "" {
			key = "(top level)"
		}
		return &ConfigError{Key: key, Msg: fmt.Sprintf(format, args...), Where: fmt.Sprintf("line %d", n.Line)}
	}
	if own, err := checkOwnForm(n, t, bad); own {
		return err
	}
	switch t.Kind() {
	case reflect.Struct:
		return checkStruct(n, t, path, bad)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return bad("expected a mapping (name: value), got %s", describe(n))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkNode(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return bad("expected a list, e.g. [a, b] or one \"- item\" per line, got %s", describe(n))
		}
		for i, item := range n.Content {
			if err := checkNode(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	default:
		return checkScalar(n, t, bad)
	}
	return nil
}

// badNode makes the error of a node that has the wrong shape or type, at its key and line.
type badNode func(format string, args ...any) error

// checkOwnForm checks the types that are not read by their kind: Duration and ByteSize, parsed
// here so that their errors name the key, and types with their own YAML form, which check
// themselves when decoded. own is false for every other type.
func checkOwnForm(n *yaml.Node, t reflect.Type, bad badNode) (own bool, err error) {
	switch {
	case t != durationType && t != byteSizeType && reflect.PointerTo(t).Implements(unmarshalerType):
		return true, nil // a type with its own YAML form checks itself when decoded
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			return true, bad("expected a duration like 30s, 5m or 24h, got %s", describe(n))
		}
		if _, err := parseDuration(n.Value); err != nil {
			return true, bad("%v", err)
		}
		return true, nil
	case t == byteSizeType:
		if n.Kind != yaml.ScalarNode {
			return true, bad("expected a size like 20MiB or 512KiB, got %s", describe(n))
		}
		if _, err := parseByteSize(n.Value); err != nil {
			return true, bad("%v", err)
		}
		return true, nil
	}
	return false, nil
}

// checkStruct checks a mapping against struct t: every key must be one of t's YAML names (a
// misspelt one gets the closest name as a hint), and every value must fit its field.
func checkStruct(n *yaml.Node, t reflect.Type, path string, bad badNode) error {
	if n.Kind != yaml.MappingNode {
		return bad("expected a mapping of keys (%s), got %s (see echogate.example.yaml)", strings.Join(yamlKeys(t), ", "), describe(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f, ok := fieldByYAMLName(t, k.Value)
		if !ok {
			hint := "check its spelling against echogate.example.yaml"
			if s := closest(k.Value, yamlKeys(t)); s != "" {
				hint = fmt.Sprintf("did you mean %q?", s)
			}
			return &ConfigError{Key: join(path, k.Value), Msg: fmt.Sprintf("unknown key %q: %s", k.Value, hint), Where: fmt.Sprintf("line %d", k.Line)}
		}
		if err := checkNode(v, f.Type, join(path, k.Value)); err != nil {
			return err
		}
	}
	return nil
}

// checkScalar checks a scalar of kind t.Kind(): YAML's tag must say the same thing (no fraction
// for a whole number, no quoted number for a bool). Other kinds are accepted.
func checkScalar(n *yaml.Node, t reflect.Type, bad badNode) error {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			return bad("expected a whole number, got %s", describe(n))
		}
	case reflect.Float32, reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
			return bad("expected a number, got %s", describe(n))
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			return bad("expected true or false, got %s", describe(n))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return bad("expected a single value, got %s (quote it if it contains : or #)", describe(n))
		}
	}
	return nil
}

// describe says what a node is, in YAML words.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!float":
		return n.Value + " (a fraction)"
	case "!!str":
		return strconv.Quote(n.Value)
	}
	return n.Value
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func yamlName(f reflect.StructField) string {
	return strings.Split(f.Tag.Get("yaml"), ",")[0]
}

func fieldByYAMLName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() && yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() {
			if n := yamlName(f); n != "" && n != "-" {
				keys = append(keys, n)
			}
		}
	}
	return keys
}

// envNames lists every variable applyEnv reads: ECHOGATE_<PATH> for each scalar key and the
// well-known names of `env` tags.
func envNames(t reflect.Type, prefix string, out map[string]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		key := prefix + "_" + strings.ToUpper(name)
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			envNames(f.Type, key, out)
			continue
		}
		if tag := f.Tag.Get("env"); tag != "" {
			out[tag] = true
		}
		switch f.Type.Kind() {
		case reflect.Map, reflect.Slice:
			if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.String {
				out[key] = true
			}
		default:
			out[key] = true
		}
	}
}

// envAllowed are ECHOGATE_ variables read outside the config tree (tests and benchmarks use
// the prefixes).
var envAllowed = []string{"ECHOGATE_CONFIG", "ECHOGATE_ARTIFACTS_DIR", "ECHOGATE_SECRET_KEY" /* seals MCP OAuth grants (internal/secretbox) */}

var envAllowedPrefixes = []string{"ECHOGATE_TEST_", "ECHOGATE_BENCH_"}

// checkEnvNames fails on an ECHOGATE_* variable that no setting reads (a typo would otherwise be
// ignored silently), naming the closest known variable.
func checkEnvNames(environ []string) error {
	known := map[string]bool{}
	envNames(reflect.TypeOf(Config{}), "ECHOGATE", known)
	for _, n := range envAllowed {
		known[n] = true
	}
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "ECHOGATE_") || known[name] {
			continue
		}
		allowed := false
		for _, p := range envAllowedPrefixes {
			allowed = allowed || strings.HasPrefix(name, p)
		}
		for _, sec := range envMapSections(reflect.TypeOf(Config{}), "ECHOGATE") {
			_, _, ok := sec.split(name)
			allowed = allowed || ok
		}
		if allowed {
			continue
		}
		msg := "no setting reads it: see README.md (Configuration) for the names, or unset it"
		if s, ok := envLikelier[name]; ok {
			msg = "no setting reads it; did you mean " + s + "?"
		} else if s := closest(name, names); s != "" {
			msg = fmt.Sprintf("no setting reads it; did you mean %s?", s)
		}
		return &ConfigError{Key: name, Msg: msg}
	}
	return nil
}

// validateModels checks what the router and providers would refuse only after the store was
// migrated: a provider that cannot authenticate, routes and fallbacks naming a model that no
// provider serves, unknown route rules.
func (c *Config) validateModels() error {
	listed := map[string]bool{c.Models.Default: true}
	// A name no provider lists goes to the first provider: decided only when that one lists
	// its models (configModels).
	decided := len(c.Models.Providers) > 0 && len(c.Models.Providers[0].Models) > 0
	for i, p := range c.Models.Providers {
		if p.APIKey == "" && strings.Contains(p.BaseURL, "://api.openai.com") {
			return &ConfigError{Key: fmt.Sprintf("models.providers[%d].api_key", i),
				Msg: "OPENAI_API_KEY is empty: set it, point base_url (OPENAI_BASE_URL) at a server that needs no key, or remove the provider to use the offline demo model"}
		}
		for _, m := range p.Models {
			listed[m] = true
		}
	}
	known := make([]string, 0, len(listed))
	for m := range listed {
		known = append(known, m)
	}
	sort.Strings(known)
	check := func(key, model string) error {
		if model == "" {
			return &ConfigError{Key: key, Msg: "name a model, e.g. " + c.Models.Default}
		}
		if !decided || listed[model] {
			return nil
		}
		msg := fmt.Sprintf("%q is not models.default and no provider lists it in models.providers[].models", model)
		if s := closest(model, known); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else {
			msg += fmt.Sprintf(" (known: %s)", strings.Join(known, ", "))
		}
		return &ConfigError{Key: key, Msg: msg}
	}
	for i, r := range c.Models.Routes {
		key := fmt.Sprintf("models.routes[%d]", i)
		switch r.When {
		case "", "default", "long", "code", "attachments", "tools":
		default:
			return &ConfigError{Key: key + ".when", Msg: fmt.Sprintf("%q: use default, long, code, attachments or tools", r.When)}
		}
		if err := check(key+".model", r.Model); err != nil {
			return err
		}
		for j, f := range r.Fallback {
			if err := check(fmt.Sprintf("%s.fallback[%d]", key, j), f); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropUnsetProviders turns providers with neither api_key nor base_url (an example file copied
// before a key was set: ${OPENAI_API_KEY} expanded to nothing) into the offline demo model.
func (c *Config) dropUnsetProviders() {
	for _, p := range c.Models.Providers {
		if p.APIKey != "" || p.BaseURL != "" {
			return
		}
	}
	c.Models.Providers = nil
}
