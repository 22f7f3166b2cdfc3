package mcp

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/echogate/echogate/tools"
)

// maxTools bounds how many tools one server may register (a runaway listing must not flood the
// model's catalogue).
const maxTools = 256

// refresh lists the server's tools (all pages) and brings the registry in line: new tools are
// added, changed ones replaced, vanished ones removed.
func (s *server) refresh(ctx context.Context, cs *sdk.ClientSession) error {
	var listed []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		if t == nil {
			continue
		}
		if err := checkTool(t); err != nil {
			s.log.Warn("mcp: tool definition rejected; the server's other tools are offered", "tool", t.Name, "reason", err.Error())
			continue
		}
		if len(listed) == maxTools {
			s.log.Warn("mcp: server lists too many tools; ignoring the rest", "max", maxTools)
			break
		}
		listed = append(listed, t)
	}
	sort.Slice(listed, func(i, j int) bool { return listed[i].Name < listed[j].Name })
	changed, err := s.apply(cs, listed)
	if changed {
		s.m.notify()
	}
	return err
}

// apply registers listed (sorted by name) as the server's tools. It reports whether anything
// visible changed. The session's first listing also marks the server connected, under the
// same lock as the registration: whoever sees one of its tools in the registry then reads
// Connected in Status, and a server Ready or Status reports connected offers its tools.
func (s *server) apply(cs *sdk.ClientSession, listed []*sdk.Tool) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != cs {
		return false, fmt.Errorf("mcp: %s: session ended while listing", s.cfg.Name)
	}
	changed := false
	if !s.connected {
		s.connected, s.since, s.lastErr, s.attempts, s.needsLogin = true, time.Now(), "", 0, false
		changed = true
	}
	want := make(map[string]*entry, len(listed))
	taken := func(name string) bool {
		if _, ok := want[name]; ok {
			return true
		}
		if s.registered[name] {
			return false
		}
		_, exists := s.m.reg.Get(name)
		return exists
	}
	for _, t := range listed {
		name := registryName(s.cfg.Name, t.Name, taken)
		safety, ok := s.toolSafety[t.Name]
		if !ok {
			safety = s.safety
		}
		spec := buildSpec(s.cfg.Name, name, t, safety)
		if e, ok := s.known[name]; ok && e.remote == t.Name && sameSpec(e.spec, spec) {
			want[name] = e
			continue
		}
		rt := &remoteTool{srv: s, remote: t.Name, spec: spec}
		want[name] = &entry{remote: t.Name, spec: spec, tool: tools.WithBreaker(rt, s.breaker, s.m.log, s.m.onState)}
	}
	for name := range s.registered {
		if _, keep := want[name]; !keep {
			s.m.reg.Remove(name)
			delete(s.registered, name)
			changed = true
		}
	}
	var problems []string
	for name, e := range want {
		if s.registered[name] && s.known[name] == e {
			continue
		}
		var err error
		if s.registered[name] {
			err = s.m.reg.Replace(e.tool)
		} else {
			err = s.m.reg.Add(e.tool)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("tool %s not registered: %v", e.remote, err))
			continue
		}
		s.registered[name] = true
		changed = true
	}
	s.known = want
	if len(problems) > 0 {
		sort.Strings(problems)
		s.lastErr = strings.Join(problems, "; ")
		s.log.Warn("mcp: some tools could not be registered", "err", s.lastErr)
		changed = true
	} else if s.connected && s.lastErr != "" {
		s.lastErr = "" // an earlier listing problem is solved
		changed = true
	}
	return changed, nil
}

func sameSpec(a, b tools.Spec) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Safety == b.Safety && string(a.Parameters) == string(b.Parameters)
}

// unregisterAll removes the server's tools from the registry.
func (s *server) unregisterAll() {
	s.closeUsers()
	s.mu.Lock()
	n := len(s.registered)
	for name := range s.registered {
		s.m.reg.Remove(name)
	}
	clear(s.registered)
	s.mu.Unlock()
	if n > 0 {
		s.m.notify()
	}
}
