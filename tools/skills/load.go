package skills

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Defaults of Config.
const (
	DefaultDir           = "skills"      // under Config.Base
	DefaultLockFile      = "skills.lock" // under Config.Base
	DefaultMaxFiles      = 500
	DefaultMaxSkillBytes = 256 << 10
)

// Config says where skills live. The zero value means defaults.
type Config struct {
	// Dirs lists the folders that hold one folder per skill (skills.dirs), in priority order: a
	// name found twice keeps the first. Relative paths resolve against Base. nil means
	// [Base/skills], and then a missing folder is not a problem.
	Dirs []string
	// Base is the folder relative paths resolve against: the config file's folder (so skills
	// and their lock sit beside the config the operator reviews, outside the data dir the
	// agent's commands may write to). "" means the working directory.
	Base string
	// Lock is the skills.lock path (Base/skills.lock by default). Load checks the skills
	// against it when it exists.
	Lock string
	// MaxFiles caps the files of one skill (default 500); MaxSkillBytes the size of a SKILL.md
	// (default 256 KiB). A skill over either is skipped.
	MaxFiles      int
	MaxSkillBytes int64
}

func (c Config) withDefaults() Config {
	if c.Base == "" {
		c.Base = "."
	}
	if c.Lock == "" {
		c.Lock = DefaultLockFile
	}
	if !filepath.IsAbs(c.Lock) {
		c.Lock = filepath.Join(c.Base, c.Lock)
	}
	c.MaxFiles = cmp.Or(c.MaxFiles, DefaultMaxFiles)
	c.MaxSkillBytes = cmp.Or(c.MaxSkillBytes, DefaultMaxSkillBytes)
	return c
}

// LockPath returns where cfg's skills.lock is.
func (c Config) LockPath() string { return c.withDefaults().Lock }

// Load scans the skills (see Scan) and, when the lock file exists, refuses every skill that
// differs from it (see Lock.Verify). It never fails as a whole: what is wrong is in the
// problems, for startup warnings and doctor, and the set holds the skills that passed.
func Load(cfg Config) (*Set, []Problem) {
	cfg = cfg.withDefaults()
	set, ps := Scan(cfg)
	lock, ok, err := ReadLock(cfg.Lock)
	switch {
	case err != nil:
		ps = append(ps, Problem{File: cfg.Lock, Msg: err.Error(),
			Fix: "restore the file from version control or run `echogate skills lock` again; until then no skill is loaded"})
		return newSet(nil, true), ps
	case !ok:
		return set, ps
	}
	kept, lps := lock.Verify(set, cfg.Lock)
	return kept, append(ps, lps...)
}

// Scan reads every skill folder of cfg.Dirs, validates it and hashes its files, without
// looking at the lock (`echogate skills lock` writes the lock from it). It blocks on file
// I/O; it does not follow symlinks out of a skill's folder.
func Scan(cfg Config) (*Set, []Problem) {
	cfg = cfg.withDefaults()
	dirs, optional := cfg.Dirs, false
	if dirs == nil {
		dirs, optional = []string{DefaultDir}, true
	}
	var (
		ps   []Problem
		list []*Skill
		seen = map[string]string{}
	)
	for _, d := range dirs {
		shown := d
		if !filepath.IsAbs(d) {
			d = filepath.Join(cfg.Base, d)
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			if !(optional && errors.Is(err, fs.ErrNotExist)) {
				ps = append(ps, Problem{File: shown, Msg: "cannot read the skills folder: " + err.Error(),
					Fix: "create it, or correct skills.dirs"})
			}
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			dir := filepath.Join(d, e.Name())
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				continue // a README beside the skills, a broken link
			}
			sk, sps := loadSkill(cfg, dir, filepath.Join(shown, e.Name()))
			ps = append(ps, sps...)
			if sk == nil {
				continue
			}
			if first, dup := seen[sk.Name]; dup {
				ps = append(ps, Problem{Skill: sk.Name, File: filepath.Join(shown, e.Name()),
					Msg: "a skill of the same name is already loaded from " + first, Fix: "remove one of them or rename it"})
				continue
			}
			seen[sk.Name] = filepath.Join(shown, e.Name())
			list = append(list, sk)
		}
	}
	return newSet(list, false), ps
}

// loadSkill validates one skill folder and hashes its files; shown is the folder as the
// operator wrote it, for problems.
func loadSkill(cfg Config, dir, shown string) (*Skill, []Problem) {
	folder := filepath.Base(dir)
	mdShown := filepath.Join(shown, "SKILL.md")
	fail := func(msg, fix string) (*Skill, []Problem) {
		return nil, []Problem{{Skill: folder, File: mdShown, Msg: msg, Fix: fix}}
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return fail("cannot resolve the skill folder: "+err.Error(), "check the folder's permissions")
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return fail("cannot open the skill folder: "+err.Error(), "check the folder's permissions")
	}
	defer root.Close()
	md, err := readCapped(root, "SKILL.md", cfg.MaxSkillBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail("is missing", "every skill folder needs a SKILL.md (front matter with name and description, then instructions); remove the folder if it is not a skill")
	case errors.Is(err, errTooBig):
		return fail(fmt.Sprintf("is larger than %d bytes", cfg.MaxSkillBytes), "move detail into references/ files the body points to")
	case err != nil:
		return fail("cannot be read: "+err.Error(), "check the file's permissions")
	}
	sk, ps := Parse(folder, mdShown, md)
	if sk == nil {
		return nil, ps
	}
	sk.Dir = abs
	files, fps, err := hashFiles(root, md, cfg.MaxFiles, folder, shown)
	ps = append(ps, fps...)
	if err != nil {
		return nil, append(ps, Problem{Skill: folder, File: shown, Msg: err.Error(), Fix: "keep a skill's folder small: scripts, references and assets it uses"})
	}
	sk.Files = files
	return sk, ps
}

var errTooBig = errors.New("too big")

// readCapped reads name from root, refusing non-regular files and files over max bytes.
func readCapped(root *os.Root, name string, max int64) ([]byte, error) {
	fi, err := root.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	if fi.Size() > max {
		return nil, errTooBig
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = errTooBig
	}
	return data, err
}

// hashFiles walks the skill's folder inside root. SKILL.md is hashed from md, the bytes that
// were parsed, so the body served and the hash pinned are the same.
func hashFiles(root *os.Root, md []byte, maxFiles int, folder, shown string) ([]File, []Problem, error) {
	var (
		files []File
		ps    []Problem
	)
	skip := func(p, msg, fix string) {
		ps = append(ps, Problem{Skill: folder, File: filepath.Join(shown, filepath.FromSlash(p)), Msg: msg, Fix: fix, Warning: true})
	}
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if len(files) >= maxFiles {
			return fmt.Errorf("has more than %d files", maxFiles)
		}
		if p == "SKILL.md" {
			files = append(files, describe(p, md, int64(len(md)), sha256.Sum256(md)))
			return nil
		}
		if strings.ContainsFunc(p, unicode.IsControl) {
			skip(strconv.Quote(p), "has a control character in its name; it is not served", "rename it")
			return nil
		}
		fi, err := root.Stat(p) // follows symlinks, only inside the folder
		switch {
		case err != nil && d.Type()&fs.ModeSymlink != 0:
			skip(p, "is a symlink that leads outside the skill's folder (or nowhere); it is not served", "copy the file into the skill, or use a relative link to a file inside it")
			return nil
		case err != nil:
			return err
		case fi.IsDir():
			skip(p, "is a symlink to a folder; it is not followed", "copy the folder into the skill")
			return nil
		case !fi.Mode().IsRegular():
			skip(p, "is not a regular file; it is not served", "remove it")
			return nil
		}
		f, err := hashFile(root, p)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return files, ps, err
}

// hashFile hashes the file at p and sniffs its type from the first bytes.
func hashFile(root *os.Root, p string) (File, error) {
	f, err := root.Open(p)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	h := sha256.New()
	head := make([]byte, 8<<10)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return File{}, err
	}
	h.Write(head[:n])
	rest, err := io.Copy(h, f)
	if err != nil {
		return File{}, err
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return describe(p, head[:n], int64(n)+rest, sum), nil
}

// describe builds a File from its first bytes (head), its size and its hash.
func describe(p string, head []byte, size int64, sum [sha256.Size]byte) File {
	text := isText(head, size)
	mt := http.DetectContentType(head)
	if text && strings.HasPrefix(mt, "application/octet-stream") {
		mt = "text/plain; charset=utf-8"
	}
	return File{Path: path.Clean(p), Size: size, SHA256: hex.EncodeToString(sum[:]), Type: mt, Text: text}
}

// isText reports whether head (the whole file, or its first bytes when size is larger) is
// UTF-8 without NUL bytes. A multi-byte character cut at the end of head does not count.
func isText(head []byte, size int64) bool {
	if slices.Contains(head, 0) {
		return false
	}
	if int64(len(head)) < size {
		head = trimCutRune(head)
	}
	return utf8.Valid(head)
}

// trimCutRune drops an incomplete multi-byte character at the end of b.
func trimCutRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
