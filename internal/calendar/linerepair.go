package calendar

import (
	"fmt"
	"strings"
)

// maxLineRepairs bounds how many dropped lines are named one by one.
const maxLineRepairs = 20

// dropBadLines removes the content lines go-ical's decoder refuses (it
// rejects the whole stream for one of them): a line with no colon, a
// parameter without "=", a quote inside an unquoted parameter value or an
// unterminated one (RFC 5545 §3.1's contentline grammar). Folded lines are
// unfolded first. Each drop is named by line number, the component it was
// in and its property name, so one mangled property costs that property
// only. It returns the stream and the problems, none when nothing was
// dropped.
func dropBadLines(data []byte) ([]byte, []Problem) {
	raw := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	type line struct {
		text string
		no   int
	}
	var lines []line
	for i, l := range raw {
		if len(lines) > 0 && l != "" && (l[0] == ' ' || l[0] == '\t') {
			lines[len(lines)-1].text += l[1:]
			continue
		}
		lines = append(lines, line{l, i + 1})
	}
	var out []string
	var probs []Problem
	var stack []string
	dropped := 0
	for _, l := range lines {
		if l.text == "" {
			continue
		}
		name, value, _ := strings.Cut(l.text, ":")
		switch strings.ToUpper(strings.TrimSpace(name)) {
		case "BEGIN":
			stack = append(stack, strings.ToUpper(strings.TrimSpace(value)))
		case "END":
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
		if err := checkContentLine(l.text); err != nil {
			dropped++
			if dropped <= maxLineRepairs {
				comp := "VCALENDAR"
				if len(stack) > 0 {
					comp = stack[len(stack)-1]
				}
				prop := l.text
				if i := strings.IndexAny(prop, ";:"); i >= 0 {
					prop = prop[:i]
				}
				if len(prop) > 40 {
					prop = prop[:40] + "…"
				}
				probs = append(probs, Problem{Component: comp, Reason: fmt.Sprintf("line %d (%q) dropped: %v", l.no, prop, err)})
			}
			continue
		}
		out = append(out, l.text)
	}
	if dropped > maxLineRepairs {
		probs = append(probs, Problem{Component: "VCALENDAR", Reason: fmt.Sprintf("%d more malformed lines dropped", dropped-maxLineRepairs)})
	}
	if dropped == 0 {
		return data, nil
	}
	return []byte(strings.Join(out, "\r\n") + "\r\n"), probs
}

// checkContentLine reports why a content line would be refused: name,
// then ";param=value[,value]" parts, then ":" and the value.
func checkContentLine(l string) error {
	i := strings.IndexAny(l, ";:")
	switch {
	case i < 0:
		return fmt.Errorf("no colon")
	case i == 0:
		return fmt.Errorf("empty property name")
	}
	s := l[i:]
	for strings.HasPrefix(s, ";") {
		s = s[1:]
		eq := strings.IndexByte(s, '=')
		switch {
		case eq < 0:
			return fmt.Errorf("parameter without '='")
		case eq == 0:
			return fmt.Errorf("empty parameter name")
		}
		// go-ical reads the name up to the first '=', wherever it is.
		s = s[eq+1:]
		for {
			if strings.HasPrefix(s, `"`) {
				end := strings.IndexByte(s[1:], '"')
				if end < 0 {
					return fmt.Errorf("unterminated quoted parameter value")
				}
				s = s[end+2:]
			} else {
				j := strings.IndexAny(s, `";,:`)
				if j < 0 {
					return fmt.Errorf("no colon after the parameters")
				}
				if s[j] == '"' {
					return fmt.Errorf("quote inside a parameter value")
				}
				s = s[j:]
			}
			if s == "" {
				return fmt.Errorf("no colon after the parameters")
			}
			if s[0] != ',' {
				break
			}
			s = s[1:]
		}
		if s[0] != ';' && s[0] != ':' {
			return fmt.Errorf("unexpected %q after a parameter value", s[0])
		}
	}
	if !strings.HasPrefix(s, ":") {
		return fmt.Errorf("no colon after the parameters")
	}
	return nil
}
