// Package memory is the assistant's profile memory: three small Markdown
// files in DATA/memory the user can read and edit — USER.md (facts about
// the user), MEMORY.md (facts about the environment) and AGENT.md (the
// assistant's voice and style) — that go into every turn's system prompt in
// a fixed order, and the promotion queue of candidate facts a model
// proposed from chats, which only the user can accept.
//
// Entries are separated by a line holding only "§". Writes dedup (case,
// accents and punctuation ignored, plus paraphrases by token containment),
// keep a .bak of the previous file, refuse text with hidden characters or
// instruction-like patterns, and return the file's new full content.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// profile memory in `DATA/memory` (`USER.md` ≤ 3,000 chars, `MEMORY.md` ≤ 5,000, `AGENT.md`;
// entries split by a `§` line): dedup ignoring case/accents/punctuation plus token-containment
// paraphrases, `.bak` before each change, safety scan, full content returned; placed in the system
// prompt as AGENT.md → base prompt → USER.md → MEMORY.md (a stable prefix; the time goes with the
// latest user message); the `memory` tool; the promotion queue (`memory.db`: ≤ 200 pending, 30-day
// expiry, warnings) filled by one schema-bound model call when a chat goes idle or the reducer
// compacts it — only the user accepts.
package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"
)

// Targets.
const (
	User   = "USER.md"
	Memory = "MEMORY.md"
	Agent  = "AGENT.md"
)

// Delimiter separates entries inside a file.
const Delimiter = "§"

// Limits in characters (runes) per file.
var limits = map[string]int{User: 3000, Memory: 5000, Agent: 8000}

// Limit returns a target's character cap.
func Limit(target string) int { return limits[target] }

// ErrDuplicate is returned when an entry says what an existing one says.
var ErrDuplicate = errors.New("duplicate")

// ErrRefused is returned for text the safety scan refuses.
var ErrRefused = errors.New("refused")

// Target parses a target name: user, memory, agent, or the file names.
func Target(s string) (string, error) {
	switch strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), ".md")) {
	case "user":
		return User, nil
	case "memory":
		return Memory, nil
	case "agent":
		return Agent, nil
	}
	return "", fmt.Errorf("memory target %q is not one of user, memory, agent", s)
}

// Profile is the memory folder.
type Profile struct {
	dir string
	mu  sync.Mutex // serialises read-modify-write of the files
}

// OpenProfile returns the profile in dir, creating the folder.
func OpenProfile(dir string) (*Profile, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating memory folder: %w", err)
	}
	return &Profile{dir: dir}, nil
}

// Dir is the memory folder.
func (p *Profile) Dir() string { return p.dir }

// Path is a target's file path.
func (p *Profile) Path(target string) string { return filepath.Join(p.dir, target) }

// Read returns a target's whole content ("" when the file is missing).
func (p *Profile) Read(target string) (string, error) {
	if _, ok := limits[target]; !ok {
		return "", fmt.Errorf("unknown memory target %q", target)
	}
	b, err := os.ReadFile(p.Path(target))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", target, err)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

// Entries splits a file into its trimmed, non-empty entries.
func Entries(content string) []string {
	var out []string
	for _, e := range strings.Split(strings.ReplaceAll(content, "\r\n", "\n"), "\n"+Delimiter+"\n") {
		e = strings.TrimSpace(strings.TrimPrefix(strings.TrimSuffix(strings.TrimSpace(e), Delimiter), Delimiter))
		if e != "" {
			out = append(out, e)
		}
	}
	return out
}

func join(entries []string) string {
	if len(entries) == 0 {
		return ""
	}
	return strings.Join(entries, "\n"+Delimiter+"\n") + "\n"
}

// Result is a write's outcome: the target and its new full content.
type Result struct {
	Target  string   `json:"target"`
	Content string   `json:"content"`
	Chars   int      `json:"chars"`
	Limit   int      `json:"limit"`
	Notes   []string `json:"notes,omitempty"`
}

// Add appends entries to a target. An entry that duplicates or paraphrases
// one already in any profile file is skipped with a note; if every entry
// is skipped the error wraps ErrDuplicate. Going over the target's limit is
// an error and writes nothing.
func (p *Profile) Add(target string, texts ...string) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, err := p.Read(target)
	if err != nil {
		return Result{}, err
	}
	entries := Entries(cur)
	others := p.allEntries(target)
	var notes []string
	added := 0
	for _, t := range texts {
		t = strings.TrimSpace(t)
		if t == "" {
			return Result{}, errors.New("entry text is empty")
		}
		if err := Scan(t); err != nil {
			return Result{}, err
		}
		if d := FindDuplicate(t, append(append([]string(nil), entries...), others...)); d != "" {
			notes = append(notes, fmt.Sprintf("skipped %q: already remembered as %q", clip(t), clip(d)))
			continue
		}
		entries = append(entries, t)
		added++
	}
	if added == 0 {
		return Result{}, fmt.Errorf("%w: %s", ErrDuplicate, strings.Join(notes, "; "))
	}
	res, err := p.write(target, join(entries))
	res.Notes = notes
	return res, err
}

// Replace swaps the one entry containing old for text.
func (p *Profile) Replace(target, old, text string) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	text = strings.TrimSpace(text)
	if text == "" {
		return Result{}, errors.New("replacement text is empty (use remove)")
	}
	if err := Scan(text); err != nil {
		return Result{}, err
	}
	cur, err := p.Read(target)
	if err != nil {
		return Result{}, err
	}
	entries := Entries(cur)
	i, err := findEntry(entries, old)
	if err != nil {
		return Result{}, err
	}
	rest := append(append([]string(nil), entries[:i]...), entries[i+1:]...)
	if d := FindDuplicate(text, append(rest, p.allEntries(target)...)); d != "" {
		return Result{}, fmt.Errorf("%w: %q is already remembered as %q", ErrDuplicate, clip(text), clip(d))
	}
	entries[i] = text
	return p.write(target, join(entries))
}

// Remove deletes the one entry containing old.
func (p *Profile) Remove(target, old string) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur, err := p.Read(target)
	if err != nil {
		return Result{}, err
	}
	entries := Entries(cur)
	i, err := findEntry(entries, old)
	if err != nil {
		return Result{}, err
	}
	return p.write(target, join(append(entries[:i], entries[i+1:]...)))
}

// Set replaces a whole file (the user's own editor path: hestia memory
// edit and the UI). It keeps the .bak and the limit but no dedup.
func (p *Profile) Set(target, content string) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := limits[target]; !ok {
		return Result{}, fmt.Errorf("unknown memory target %q", target)
	}
	if !utf8.ValidString(content) {
		return Result{}, errors.New("content is not valid UTF-8")
	}
	return p.write(target, content)
}

func findEntry(entries []string, old string) (int, error) {
	old = strings.TrimSpace(old)
	if old == "" {
		return 0, errors.New("old_text is empty: name the entry to change")
	}
	at := -1
	for i, e := range entries {
		if strings.Contains(e, old) || normalize(e) == normalize(old) {
			if at >= 0 {
				return 0, fmt.Errorf("%q matches more than one entry; quote more of it", clip(old))
			}
			at = i
		}
	}
	if at < 0 {
		return 0, fmt.Errorf("no entry contains %q", clip(old))
	}
	return at, nil
}

// allEntries returns the entries of the other two files, for cross-file
// dedup. Must hold p.mu.
func (p *Profile) allEntries(except string) []string {
	var out []string
	for t := range limits {
		if t == except || t == Agent {
			continue
		}
		c, err := p.Read(t)
		if err == nil {
			out = append(out, Entries(c)...)
		}
	}
	return out
}

// write checks the limit, keeps the previous file as .bak and writes the
// new content atomically. Must hold p.mu.
func (p *Profile) write(target, content string) (Result, error) {
	n := utf8.RuneCountInString(content)
	if lim := limits[target]; n > lim {
		return Result{}, fmt.Errorf("%s would be %d characters, over its %d limit: remove or shorten entries first", target, n, lim)
	}
	path := p.Path(target)
	if fi, err := os.Lstat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return Result{}, fmt.Errorf("%s is not a regular file", target)
		}
		old, err := os.ReadFile(path)
		if err != nil {
			return Result{}, err
		}
		if err := atomicWrite(path+".bak", old); err != nil {
			return Result{}, fmt.Errorf("keeping %s.bak: %w", target, err)
		}
	}
	if err := atomicWrite(path, []byte(content)); err != nil {
		return Result{}, fmt.Errorf("writing %s: %w", target, err)
	}
	return Result{Target: target, Content: content, Chars: n, Limit: limits[target]}, nil
}

func atomicWrite(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mem-*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

func clip(s string) string {
	if utf8.RuneCountInString(s) <= 80 {
		return s
	}
	return string([]rune(s)[:80]) + "…"
}

// PromptParts returns what goes into the system prompt: AGENT.md before
// the base instructions, USER.md and MEMORY.md after them, always in this
// order and byte-identical between turns while the files do not change, so
// a provider's prompt cache keeps hitting.
func (p *Profile) PromptParts() (before, after string) {
	a, _ := p.Read(Agent)
	u, _ := p.Read(User)
	m, _ := p.Read(Memory)
	if s := strings.TrimSpace(a); s != "" {
		before = "# Your voice and style (AGENT.md)\n" + strings.Join(Entries(s), "\n") + "\n\n"
	}
	if s := strings.TrimSpace(u); s != "" {
		after += "\n\n# About the user (USER.md)\n- " + strings.Join(Entries(s), "\n- ")
	}
	if s := strings.TrimSpace(m); s != "" {
		after += "\n\n# About the environment (MEMORY.md)\n- " + strings.Join(Entries(s), "\n- ")
	}
	return before, after
}
