package pipeline

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// formField is one property of a question's form (a flat JSON object schema, as MCP's
// elicitation allows: strings, numbers, integers, booleans and enums of strings).
type formField struct {
	Name, Title, Type string
	Enum              []string
	Default           any
	Required          bool
}

// form is a question's fields, in the schema's order of names (sorted, so the prompt is stable).
type form struct {
	fields []formField
}

// maxFormFields bounds the fields a question may ask: a longer form is not something to fill in
// by chat, and is declined.
const maxFormFields = 10

// parseForm reads a flat object schema. An empty schema is a form without fields (a yes/no
// question).
func parseForm(schema json.RawMessage) (form, error) {
	if len(strings.TrimSpace(string(schema))) == 0 || string(schema) == "null" {
		return form{}, nil
	}
	var s struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type    string   `json:"type"`
			Title   string   `json:"title"`
			Enum    []any    `json:"enum"`
			Default any      `json:"default"`
			OneOf   []any    `json:"oneOf"`
			Items   struct{} `json:"items"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return form{}, fmt.Errorf("the form's schema is not a JSON object schema: %v", err)
	}
	if s.Type != "" && s.Type != "object" {
		return form{}, fmt.Errorf("the form's schema has type %q, want object", s.Type)
	}
	if len(s.Properties) > maxFormFields {
		return form{}, fmt.Errorf("the form has %d fields, more than the %d a chat question takes", len(s.Properties), maxFormFields)
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var f form
	for name, p := range s.Properties {
		fd := formField{Name: name, Title: p.Title, Type: p.Type, Default: p.Default, Required: required[name]}
		for _, e := range p.Enum {
			es, ok := e.(string)
			if !ok {
				return form{}, fmt.Errorf("field %q: enum value %v is not a string", name, e)
			}
			fd.Enum = append(fd.Enum, es)
		}
		switch fd.Type {
		case "string", "number", "integer", "boolean":
		default:
			return form{}, fmt.Errorf("field %q has type %q: a chat question takes string, number, integer or boolean", name, fd.Type)
		}
		f.fields = append(f.fields, fd)
	}
	sort.Slice(f.fields, func(i, j int) bool { return f.fields[i].Name < f.fields[j].Name })
	return f, nil
}

// missing names the required fields without a default: an answer must give them.
func (f form) missing(content map[string]any) []string {
	var out []string
	for _, fd := range f.fields {
		if _, ok := content[fd.Name]; !ok && fd.Required && fd.Default == nil {
			out = append(out, fd.Name)
		}
	}
	return out
}

// options are the single field's choices when the form is one enum or boolean field (buttons
// can answer it); nil otherwise.
func (f form) options() []string {
	if len(f.fields) != 1 {
		return nil
	}
	fd := f.fields[0]
	switch {
	case fd.Type == "boolean":
		return []string{"yes", "no"}
	case len(fd.Enum) > 0 && len(fd.Enum) <= maxButtonOptions:
		return fd.Enum
	}
	return nil
}

// maxButtonOptions bounds the buttons of a one-field question (Slack and Discord show five in a
// row).
const maxButtonOptions = 5

// describe lists the fields for the prompt: name (type, choices, default, required).
func (f form) describe() string {
	var b strings.Builder
	for _, fd := range f.fields {
		b.WriteString("\n• `" + fd.Name + "`")
		var notes []string
		if fd.Title != "" {
			notes = append(notes, fd.Title)
		}
		switch {
		case len(fd.Enum) > 0:
			notes = append(notes, "one of "+strings.Join(fd.Enum, ", "))
		case fd.Type == "boolean":
			notes = append(notes, "yes or no")
		default:
			notes = append(notes, fd.Type)
		}
		if fd.Default != nil {
			notes = append(notes, fmt.Sprintf("default %v", fd.Default))
		} else if fd.Required {
			notes = append(notes, "required")
		}
		b.WriteString(" (" + strings.Join(notes, "; ") + ")")
	}
	return b.String()
}

// parseAnswer reads a typed answer: "decline" or "cancel"; "accept" (the defaults); for a form
// of one field the whole text is its value; else `name: value` lines (or `;`/`,`-separated
// pairs), or a JSON object. The error says what to fix.
func (f form) parseAnswer(text string) (Reply, error) {
	text = strings.TrimSpace(text)
	switch strings.ToLower(text) {
	case ElicitDecline, "no thanks":
		return Reply{Action: ElicitDecline}, nil
	case ElicitCancel:
		return Reply{Action: ElicitCancel}, nil
	case ElicitAccept, "ok":
		if m := f.missing(nil); len(m) > 0 {
			return Reply{}, fmt.Errorf("%s has no default: give a value", strings.Join(m, ", "))
		}
		return Reply{Action: ElicitAccept, Content: map[string]any{}}, nil
	}
	raw := map[string]string{}
	switch {
	case len(f.fields) == 0:
		return Reply{}, fmt.Errorf("this question has no fields: answer accept or decline")
	case strings.HasPrefix(text, "{"):
		var m map[string]any
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			return Reply{}, fmt.Errorf("the answer looks like JSON but is not an object: %v", err)
		}
		for k, v := range m {
			raw[k] = fmt.Sprint(v)
		}
	case len(f.fields) == 1 && !hasPair(text, f.fields[0].Name):
		raw[f.fields[0].Name] = text
	default:
		for _, part := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == ';' || r == ',' }) {
			k, v, ok := cutPair(part)
			if !ok {
				return Reply{}, fmt.Errorf("%q is not `name: value`", strings.TrimSpace(part))
			}
			raw[k] = v
		}
	}
	content := map[string]any{}
	for k, v := range raw {
		fd, ok := f.field(k)
		if !ok {
			return Reply{}, fmt.Errorf("the question has no field %q (its fields: %s)", k, f.names())
		}
		val, err := fd.convert(v)
		if err != nil {
			return Reply{}, err
		}
		content[fd.Name] = val
	}
	if m := f.missing(content); len(m) > 0 {
		return Reply{}, fmt.Errorf("%s is required: give a value", strings.Join(m, ", "))
	}
	return Reply{Action: ElicitAccept, Content: content}, nil
}

func hasPair(text, name string) bool {
	k, _, ok := cutPair(text)
	return ok && strings.EqualFold(k, name)
}

func cutPair(s string) (k, v string, ok bool) {
	k, v, ok = strings.Cut(s, ":")
	if !ok {
		k, v, ok = strings.Cut(s, "=")
	}
	k = strings.Trim(strings.TrimSpace(k), "`*")
	return k, strings.TrimSpace(v), ok && k != ""
}

func (f form) field(name string) (formField, bool) {
	for _, fd := range f.fields {
		if strings.EqualFold(fd.Name, name) {
			return fd, true
		}
	}
	return formField{}, false
}

func (f form) names() string {
	n := make([]string, len(f.fields))
	for i, fd := range f.fields {
		n[i] = fd.Name
	}
	return strings.Join(n, ", ")
}

// convert reads v as the field's type.
func (fd formField) convert(v string) (any, error) {
	v = strings.TrimSpace(v)
	switch fd.Type {
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a whole number", fd.Name, v)
		}
		return n, nil
	case "number":
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", fd.Name, v)
		}
		return n, nil
	case "boolean":
		switch strings.ToLower(v) {
		case "yes", "y", "true", "on":
			return true, nil
		case "no", "n", "false", "off":
			return false, nil
		}
		return nil, fmt.Errorf("%s: %q is not yes or no", fd.Name, v)
	}
	if len(fd.Enum) > 0 {
		for _, e := range fd.Enum {
			if strings.EqualFold(e, v) {
				return e, nil
			}
		}
		return nil, fmt.Errorf("%s: %q is not one of %s", fd.Name, v, strings.Join(fd.Enum, ", "))
	}
	return v, nil
}
