package main

// ECHOGATE_<PATH> for map sections: a map of settings per name (tools.<tool>.approval,
// slack.channels.<id>.require_mention) is reached as ECHOGATE_<PATH>_<NAME>_<KEY>, e.g.
// ECHOGATE_TOOLS_CURRENT_TIME_APPROVAL=ask. The field's `envmap` tag says how NAME is spelt in
// the map: "lower" (tool names) or "" (as written: Slack channel ids). A name already in the
// file is matched whatever its case. Maps of plain values (models.prices,
// models.context_windows, tracing.headers) are YAML only: their names are model names and
// header names, which hold characters ("-", ".") a variable name cannot.

import (
	"reflect"
	"sort"
	"strings"
)

// envMapSection is one map section reachable from the environment.
type envMapSection struct {
	prefix string   // ECHOGATE_TOOLS_
	keys   []string // the settings of one entry, upper case: APPROVAL, ALLOW_PRIVATE…
}

// envMapKeys lists the scalar settings of a map entry type, upper case.
func envMapKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if n := yamlName(f); n != "" && n != "-" && f.IsExported() && f.Type.Kind() != reflect.Map &&
			(f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() == reflect.String) {
			keys = append(keys, strings.ToUpper(n))
		}
	}
	return keys
}

// split finds the entry name and setting of a variable of this section: the longest setting
// the name ends with, after a non-empty entry name.
func (s envMapSection) split(name string) (entry, key string, ok bool) {
	rest, found := strings.CutPrefix(name, s.prefix)
	if !found {
		return "", "", false
	}
	for _, k := range s.keys {
		if e, cut := strings.CutSuffix(rest, "_"+k); cut && e != "" && len(k) > len(key) {
			entry, key, ok = e, k, true
		}
	}
	return entry, key, ok
}

// applyEnvMap sets the entries of the map fv (of structs) from the variables named
// prefix_<NAME>_<KEY>.
func applyEnvMap(fv reflect.Value, prefix, path, mode string, getenv func(string) string, environ []string, set map[string]string) error {
	et := fv.Type().Elem()
	if et.Kind() != reflect.Struct {
		return nil
	}
	sec := envMapSection{prefix: prefix + "_", keys: envMapKeys(et)}
	names := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		entry, key, ok := sec.split(name)
		val := getenv(name)
		if !ok || val == "" {
			continue
		}
		mapKey := entryName(fv, entry, mode)
		if fv.IsNil() {
			fv.Set(reflect.MakeMap(fv.Type()))
		}
		elem := reflect.New(et).Elem()
		if cur := fv.MapIndex(reflect.ValueOf(mapKey)); cur.IsValid() {
			elem.Set(cur)
		}
		f, _ := fieldByUpperName(et, key)
		if err := setScalar(elem.FieldByIndex(f.Index), val); err != nil {
			return &ConfigError{Key: name, Msg: err.Error()}
		}
		fv.SetMapIndex(reflect.ValueOf(mapKey), elem)
		if set != nil {
			set[path+"."+mapKey+"."+yamlName(f)] = name
		}
	}
	return nil
}

// entryName is the map key an environment entry name stands for: an existing key of the same
// letters in any case, else the name in the section's case.
func entryName(m reflect.Value, entry, mode string) string {
	for _, k := range m.MapKeys() {
		if strings.EqualFold(k.String(), entry) {
			return k.String()
		}
	}
	if mode == "lower" {
		return strings.ToLower(entry)
	}
	return entry
}

func fieldByUpperName(t reflect.Type, upper string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); strings.ToUpper(yamlName(f)) == upper {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// envMapSections lists the map sections under t that the environment reaches.
func envMapSections(t reflect.Type, prefix string) []envMapSection {
	var out []envMapSection
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		key := prefix + "_" + strings.ToUpper(name)
		switch {
		case f.Type.Kind() == reflect.Struct && f.Type != durationType:
			out = append(out, envMapSections(f.Type, key)...)
		case f.Type.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Struct:
			if _, ok := f.Tag.Lookup("envmap"); ok {
				out = append(out, envMapSection{prefix: key + "_", keys: envMapKeys(f.Type.Elem())})
			}
		}
	}
	return out
}
