// Package skills installs, scans and serves skills: folders with a SKILL.md
// (front matter: name, description, version; body: instructions for the
// model) and an optional TOOLS.json capability manifest naming the tools
// the skill may use and the arguments it may pass them.
//
// A skill is installed under DATA/skills/NAME after a scan for dangerous
// content (destructive commands, credential theft, prompt injection,
// persistence, reverse shells, obfuscation, hard-coded keys, hidden
// characters); a finding blocks the install unless the user accepts the
// risk. Installed skills are re-scanned whenever their files change.
//
// The index (name and description of each skill) goes into the system
// prompt; skill_load returns a skill's body and activates its manifest as
// a policy restriction: from then on in the chat, a tool call outside the
// manifest is denied by the policy engine, whatever rules or temporary
// modes say. A skill without TOOLS.json may use read-only tools only.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// skills in `DATA/skills/NAME` (`skills.db`: accepted content hash, findings): SKILL.md front
// matter and TOOLS.json manifest parsing, the 53-rule scanner, install from
// folder/file/archive/URL with path-traversal and size checks, re-scan on change, the prompt
// index, `skill_load` (activates the manifest as a `policy.Restriction`, replayed on later turns
// of the chat).
package skills

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Limits on what a skill may contain.
const (
	MaxSkillMD   = 256 << 10 // bytes of SKILL.md
	MaxManifest  = 64 << 10  // bytes of TOOLS.json
	maxTools     = 64
	maxDescLen   = 300
	maxNameLen   = 48
	maxPatternLn = 500
)

var nameRE = lazyre.New(`^[a-z0-9][a-z0-9-]{0,47}$`)

// Meta is SKILL.md's front matter.
type Meta struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Version     string `json:"version"`
}

// ParseSkillMD splits SKILL.md into its front matter and body. The front
// matter is the block between a first line "---" and the next "---"
// line, with "key: value" lines (values optionally quoted); name and
// description are required.
func ParseSkillMD(data []byte) (Meta, string, error) {
	var m Meta
	if len(data) > MaxSkillMD {
		return m, "", fmt.Errorf("SKILL.md is %d bytes, more than %d", len(data), MaxSkillMD)
	}
	if !utf8.Valid(data) {
		return m, "", errors.New("SKILL.md is not valid UTF-8")
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	text = strings.TrimPrefix(text, "\ufeff")
	if !strings.HasPrefix(text, "---\n") {
		return m, "", errors.New(`SKILL.md must start with a front matter block ("---" line, name/description/version, "---" line)`)
	}
	rest := text[4:]
	end := strings.Index(rest, "\n---\n")
	body := ""
	switch {
	case end >= 0:
		body = rest[end+5:]
	case strings.HasSuffix(rest, "\n---"):
		end = len(rest) - 4
	default:
		return m, "", errors.New(`SKILL.md front matter is not closed by a "---" line`)
	}
	sc := bufio.NewScanner(strings.NewReader(rest[:end]))
	line := 0
	seen := map[string]bool{}
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return m, "", fmt.Errorf("SKILL.md front matter line %d: expected key: value", line)
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		if seen[k] {
			return m, "", fmt.Errorf("SKILL.md front matter line %d: %s given twice", line, k)
		}
		seen[k] = true
		switch k {
		case "name":
			m.Name = v
		case "description":
			m.Description = v
		case "version":
			m.Version = v
		default:
			// Other keys (license, author, …) are allowed and ignored.
		}
	}
	if !nameRE.MatchString(m.Name) {
		return m, "", fmt.Errorf("SKILL.md name %q must be lower-case letters, digits and dashes (at most %d)", m.Name, maxNameLen)
	}
	if m.Description == "" || utf8.RuneCountInString(m.Description) > maxDescLen {
		return m, "", fmt.Errorf("SKILL.md description must be 1 to %d characters", maxDescLen)
	}
	if strings.ContainsAny(m.Description+m.Version, "\x00\n\r") {
		return m, "", errors.New("SKILL.md front matter values must be single lines")
	}
	return m, strings.TrimSpace(body), nil
}

// Manifest is TOOLS.json: the tools a skill may call while active.
type Manifest struct {
	Tools []ToolGrant `json:"tools"`
}

// ToolGrant permits one tool (or, with a trailing *, every tool with that
// prefix) with optional constraints on its top-level arguments.
type ToolGrant struct {
	Name string                `json:"name"`
	Args map[string]Constraint `json:"args,omitempty"`
}

// Constraint limits one argument. Every set field must hold.
type Constraint struct {
	// Enum lists the allowed values (compared as JSON).
	Enum []json.RawMessage `json:"enum,omitempty"`
	// Pattern is a regular expression the string value must match whole.
	Pattern string `json:"pattern,omitempty"`
	// Prefix is what a string value must start with (a folder, a URL).
	Prefix string `json:"prefix,omitempty"`
	// MaxLength bounds a string value (characters).
	MaxLength int `json:"max_length,omitempty"`
	// Forbidden: the argument must be absent.
	Forbidden bool `json:"forbidden,omitempty"`

	re *regexp.Regexp
}

var toolNameRE = lazyre.New(`^[a-z][a-z0-9_]{0,63}\*?$`)

// ParseManifest decodes and checks TOOLS.json strictly: unknown fields,
// bad tool names and bad patterns are errors naming what is wrong.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxManifest {
		return nil, fmt.Errorf("TOOLS.json is %d bytes, more than %d", len(data), MaxManifest)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("TOOLS.json: %w", err)
	}
	if dec.More() {
		return nil, errors.New("TOOLS.json: data after the JSON object")
	}
	if len(m.Tools) > maxTools {
		return nil, fmt.Errorf("TOOLS.json grants %d tools, at most %d", len(m.Tools), maxTools)
	}
	for i := range m.Tools {
		g := &m.Tools[i]
		if !toolNameRE.MatchString(g.Name) {
			return nil, fmt.Errorf("TOOLS.json tools[%d]: name %q is not a tool name (lower case, digits, _, optional trailing *)", i, g.Name)
		}
		if g.Name == "*" || strings.HasSuffix(g.Name, "*") && len(g.Name) < 4 {
			return nil, fmt.Errorf("TOOLS.json tools[%d]: %q is too broad", i, g.Name)
		}
		for arg, c := range g.Args {
			if c.Pattern != "" {
				if len(c.Pattern) > maxPatternLn {
					return nil, fmt.Errorf("TOOLS.json tools[%d].args.%s: pattern longer than %d", i, arg, maxPatternLn)
				}
				re, err := regexp.Compile(`^(?:` + c.Pattern + `)$`)
				if err != nil {
					return nil, fmt.Errorf("TOOLS.json tools[%d].args.%s: pattern: %w", i, arg, err)
				}
				c.re = re
			}
			if c.MaxLength < 0 {
				return nil, fmt.Errorf("TOOLS.json tools[%d].args.%s: max_length must not be negative", i, arg)
			}
			g.Args[arg] = c
		}
	}
	return &m, nil
}

// grant returns the grant covering tool, or nil.
func (m *Manifest) grant(tool string) *ToolGrant {
	for i := range m.Tools {
		g := &m.Tools[i]
		if g.Name == tool || strings.HasSuffix(g.Name, "*") && strings.HasPrefix(tool, strings.TrimSuffix(g.Name, "*")) {
			return g
		}
	}
	return nil
}

// Permits checks one call against the manifest.
func (m *Manifest) Permits(tool string, args json.RawMessage) error {
	g := m.grant(tool)
	if g == nil {
		return fmt.Errorf("%s is not in the skill's TOOLS.json", tool)
	}
	if len(g.Args) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if len(args) > 0 {
		if err := json.Unmarshal(args, &obj); err != nil {
			return fmt.Errorf("arguments of %s are not an object", tool)
		}
	}
	for name, c := range g.Args {
		raw, present := obj[name]
		if c.Forbidden {
			if present {
				return fmt.Errorf("argument %s of %s is not allowed by the skill", name, tool)
			}
			continue
		}
		if !present {
			continue // absent arguments are the tool's own business (its schema)
		}
		if len(c.Enum) > 0 && !enumHas(c.Enum, raw) {
			return fmt.Errorf("argument %s of %s is %s, not one of the skill's allowed values", name, tool, raw)
		}
		if c.Pattern == "" && c.Prefix == "" && c.MaxLength == 0 {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("argument %s of %s must be a string for the skill's constraint", name, tool)
		}
		if c.MaxLength > 0 && utf8.RuneCountInString(s) > c.MaxLength {
			return fmt.Errorf("argument %s of %s is longer than the skill allows (%d)", name, tool, c.MaxLength)
		}
		// A prefix is usually a folder or a URL: ".." would walk out of it.
		if c.Prefix != "" && (!strings.HasPrefix(s, c.Prefix) || strings.Contains(s, "..")) {
			return fmt.Errorf("argument %s of %s must start with %q", name, tool, c.Prefix)
		}
		if c.re != nil && !c.re.MatchString(s) {
			return fmt.Errorf("argument %s of %s does not match the skill's pattern", name, tool)
		}
	}
	return nil
}

func enumHas(enum []json.RawMessage, v json.RawMessage) bool {
	cv, err := canonical(v)
	if err != nil {
		return false
	}
	for _, e := range enum {
		if ce, err := canonical(e); err == nil && ce == cv {
			return true
		}
	}
	return false
}

func canonical(raw json.RawMessage) (string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}
