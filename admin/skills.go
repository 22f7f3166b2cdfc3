package admin

import (
	"net/http"
	"slices"

	"github.com/echogate/echogate/internal/access"
	"github.com/echogate/echogate/pipeline"
	"github.com/echogate/echogate/tools/skills"
)

// SkillInfo is one installed skill as the console shows it.
type SkillInfo struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	Agents       []string `json:"agents"`                  // the agents whose catalogue lists it
	AllowedTools []string `json:"allowed_tools,omitempty"` // nil: the skill does not narrow the tools
	Files        int      `json:"files"`
	Locked       bool     `json:"locked"` // pinned by skills.lock
}

// SkillProblem is a problem of the last load (start or reload): a refused skill, a warning.
type SkillProblem struct {
	Skill   string `json:"skill,omitempty"`
	File    string `json:"file"`
	Field   string `json:"field,omitempty"`
	Error   string `json:"error"`
	Fix     string `json:"fix,omitempty"`
	Warning bool   `json:"warning"`
}

type SkillsView struct {
	Skills   []SkillInfo    `json:"skills"`
	Problems []SkillProblem `json:"problems"`
	Scripts  bool           `json:"scripts"` // skills.allow_scripts
}

// handleSkills lists the installed skills with the agents that have them, and the problems of
// the last load (GET /api/skills).
func (a *API) handleSkills(w http.ResponseWriter, r *http.Request) {
	v := SkillsView{Skills: []SkillInfo{}, Problems: []SkillProblem{}, Scripts: a.cfg.Scripts}
	if a.Skills == nil {
		WriteJSON(w, v, nil)
		return
	}
	set := a.Skills.Skills()
	ag := a.Pipeline.Agents()
	profiles := append(slices.Clone(ag.List), ag.Default)
	for _, sk := range set.Skills() {
		info := SkillInfo{Name: sk.Name, Description: sk.Description, Agents: []string{}, AllowedTools: sk.AllowedTools,
			Files: len(sk.Files), Locked: set.Locked()}
		for _, p := range profiles {
			if profileHasSkill(p, sk.Name) {
				info.Agents = append(info.Agents, p.Name)
			}
		}
		v.Skills = append(v.Skills, info)
	}
	for _, p := range a.SkillProblems() {
		v.Problems = append(v.Problems, SkillProblem{Skill: p.Skill, File: p.File, Field: p.Field, Error: p.Msg, Fix: p.Fix, Warning: p.Warning})
	}
	WriteJSON(w, v, nil)
}

// profileHasSkill reports whether the agent's catalogue lists the skill: its skills list allows
// it and its tools list allows the skill tool.
func profileHasSkill(p pipeline.Profile, name string) bool {
	if !skills.Allows(p.Skills, name) {
		return false
	}
	return p.Tools == nil || slices.ContainsFunc(p.Tools, func(pat string) bool { return access.Glob(pat, skills.SkillToolName) })
}
