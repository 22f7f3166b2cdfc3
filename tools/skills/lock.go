package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LockVersion is the format version written in skills.lock.
const LockVersion = 1

// Lock pins skills by the sha256 of every file: skill name → file path → "sha256:<hex>".
type Lock struct {
	Version int                          `json:"version"`
	Skills  map[string]map[string]string `json:"skills"`
}

// LockOf returns the lock of every skill in set.
func LockOf(set *Set) Lock {
	l := Lock{Version: LockVersion, Skills: map[string]map[string]string{}}
	for _, sk := range set.Skills() {
		files := make(map[string]string, len(sk.Files))
		for _, f := range sk.Files {
			files[f.Path] = "sha256:" + f.SHA256
		}
		l.Skills[sk.Name] = files
	}
	return l
}

// Marshal returns the lock's file content: indented JSON with sorted keys, so the same skills
// always give the same bytes and a review diff shows exactly the files that changed.
func (l Lock) Marshal() []byte {
	if l.Skills == nil {
		l.Skills = map[string]map[string]string{}
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return append(b, '\n')
}

// WriteLock writes the lock of set to path atomically (a temporary file renamed over it).
func WriteLock(path string, set *Set) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".skills.lock-*")
	if err != nil {
		return fmt.Errorf("skills: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(LockOf(set).Marshal()); err != nil {
		tmp.Close()
		return fmt.Errorf("skills: write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("skills: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("skills: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("skills: write %s: %w", path, err)
	}
	return nil
}

// ReadLock reads a skills.lock; ok is false (and err nil) when there is none.
func ReadLock(path string) (l Lock, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Lock{}, false, nil
	}
	if err != nil {
		return Lock{}, false, fmt.Errorf("cannot read the skills lock: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Lock{}, false, fmt.Errorf("the skills lock is not valid: %w", err)
	}
	if l.Version != LockVersion {
		return Lock{}, false, fmt.Errorf("the skills lock has version %d; this echogate reads version %d", l.Version, LockVersion)
	}
	return l, true, nil
}

// Verify returns the skills of set that match the lock exactly (same files, same hashes),
// marked locked, and an error problem for every other one, naming the skill and the file.
// Skills in the lock that are not installed are not a problem.
func (l Lock) Verify(set *Set, lockPath string) (*Set, []Problem) {
	var (
		kept []*Skill
		ps   []Problem
	)
	const fix = "review the change, then run `echogate skills lock` to accept it"
	for _, sk := range set.Skills() {
		want, ok := l.Skills[sk.Name]
		if !ok {
			ps = append(ps, Problem{Skill: sk.Name, File: lockPath,
				Msg: fmt.Sprintf("skill %q is not in the lock; it is refused", sk.Name), Fix: "review the skill, then run `echogate skills lock` to accept it"})
			continue
		}
		if diff := lockDiff(sk, want); len(diff) > 0 {
			ps = append(ps, Problem{Skill: sk.Name, File: lockPath,
				Msg: fmt.Sprintf("skill %q differs from the lock (%s); it is refused", sk.Name, strings.Join(diff, "; ")), Fix: fix})
			continue
		}
		kept = append(kept, sk)
	}
	return newSet(kept, true), ps
}

// lockDiff lists, sorted by file, how sk's files differ from the locked ones.
func lockDiff(sk *Skill, want map[string]string) []string {
	var diff []string
	for _, f := range sk.Files {
		h, ok := want[f.Path]
		switch {
		case !ok:
			diff = append(diff, f.Path+" is new")
		case h != "sha256:"+f.SHA256:
			diff = append(diff, f.Path+" changed")
		}
	}
	for p := range want {
		if _, ok := sk.File(p); !ok {
			diff = append(diff, p+" was removed")
		}
	}
	slices.Sort(diff)
	return diff
}
