// Package builtin holds the tools that ship with echogate: current_time, http_fetch,
// run_command and ask_user. Each has a New… constructor taking its Config (zero value =
// defaults) and returns a tools.Tool.
package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"

	"github.com/echogate/echogate/tools"
)

// decodeArgs decodes a tool's JSON arguments into dst (a pointer to a struct with json tags)
// strictly: unknown fields, wrong types, non-objects and trailing data are refused. Empty args
// and null mean {}. The returned error, if any, is an IsError result the model can act on.
func decodeArgs(tool string, args json.RawMessage, dst any, example string) (tools.Result, bool) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) || bytes.Equal(trimmed, []byte("{}")) {
		return tools.Result{}, true // nothing to set: dst keeps its zero value
	}
	if trimmed[0] != '{' {
		return tools.Errorf("%s: arguments must be a JSON object like %s, got %s", tool, example, clipArg(trimmed)), false
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			return tools.Errorf("%s: arguments must be exactly one JSON object like %s; found more data after it", tool, example), false
		}
		return tools.Result{}, true
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return tools.Errorf("%s: arguments are not valid JSON (%v); send an object like %s", tool, err, example), false
	case errors.As(err, &typ):
		if typ.Field == "" {
			return tools.Errorf("%s: arguments must be a JSON object like %s, got a JSON %s", tool, example, typ.Value), false
		}
		return tools.Errorf("%s: argument %q must be %s, got a JSON %s; example: %s", tool, typ.Field, jsonKind(typ.Type.String()), typ.Value, example), false
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return tools.Errorf("%s: unknown argument %s; allowed arguments: %s", tool, field, fieldNames(dst)), false
	}
	return tools.Errorf("%s: bad arguments: %v; example: %s", tool, err, example), false
}

// jsonKind names the JSON kind a Go type expects.
func jsonKind(goType string) string {
	switch {
	case goType == "string":
		return "a string"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "an integer"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "[]"):
		return "an array of " + strings.TrimPrefix(jsonKind(strings.TrimPrefix(goType, "[]")), "a ") + "s"
	}
	return "a " + goType
}

// fieldNames lists the json names of the fields of the struct dst points to.
func fieldNames(dst any) string {
	v := reflect.TypeOf(dst)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return "none"
	}
	var names []string
	for f := range v.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && f.IsExported() {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

func clipArg(b []byte) string {
	const max = 80
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
