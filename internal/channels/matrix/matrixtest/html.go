package matrixtest

import (
	"fmt"
	"strings"
)

// CheckHTML reports whether s is well-formed HTML of the tag set the
// client-server spec lists for org.matrix.custom.html: every tag allowed
// and closed in order, attributes quoted, links to http(s), mailto or
// matrix.to only, no bare < or >, and & only as an entity. Stricter than a
// browser on purpose: what passes renders the same in every client.
func CheckHTML(s string) error {
	var stack []string
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				return fmt.Errorf("a bare < at byte %d", i)
			}
			tag := s[i+1 : i+end]
			i += end + 1
			if name, ok := strings.CutPrefix(tag, "/"); ok {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return fmt.Errorf("</%s> closes nothing open (open: %v)", name, stack)
				}
				stack = stack[:len(stack)-1]
				continue
			}
			name, attrs, _ := strings.Cut(strings.TrimSuffix(tag, "/"), " ")
			if !allowedTag(name) {
				return fmt.Errorf("the tag <%s> is not in the spec's set", name)
			}
			if err := checkAttrs(name, attrs); err != nil {
				return err
			}
			if !voidTag(name) {
				stack = append(stack, name)
			}
		case '>':
			return fmt.Errorf("a bare > at byte %d", i)
		case '&':
			end := strings.IndexByte(s[i:], ';')
			if end < 2 || !entity(s[i+1:i+end]) {
				return fmt.Errorf("a bare & at byte %d", i)
			}
			i += end + 1
		default:
			i++
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed tags %v", stack)
	}
	return nil
}

func allowedTag(t string) bool {
	switch t {
	case "font", "del", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "p", "a", "ul", "ol", "sup", "sub",
		"li", "b", "i", "u", "strong", "em", "s", "code", "hr", "br", "div", "table", "thead", "tbody", "tr",
		"th", "td", "caption", "pre", "span", "img", "details", "summary":
		return true
	}
	return false
}

func voidTag(t string) bool { return t == "br" || t == "hr" || t == "img" }

func entity(e string) bool {
	if n, ok := strings.CutPrefix(e, "#x"); ok {
		return n != "" && strings.Trim(n, "0123456789abcdefABCDEF") == ""
	}
	if n, ok := strings.CutPrefix(e, "#"); ok {
		return n != "" && strings.Trim(n, "0123456789") == ""
	}
	return e != "" && len(e) < 10 && strings.Trim(e, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
}

// checkAttrs allows name="value" pairs with quoted values holding no <,
// > or quote; href only on <a> and only to safe schemes; class only
// language-* on <code>.
func checkAttrs(tag, attrs string) error {
	attrs = strings.TrimSpace(attrs)
	for attrs != "" {
		name, rest, ok := strings.Cut(attrs, `="`)
		if !ok {
			return fmt.Errorf("<%s> has an unquoted attribute %q", tag, attrs)
		}
		val, rest, ok := strings.Cut(rest, `"`)
		if !ok || strings.ContainsAny(val, "<>") {
			return fmt.Errorf("<%s %s> has a broken value", tag, name)
		}
		switch {
		case tag == "a" && name == "href":
			if !(strings.HasPrefix(val, "https://") || strings.HasPrefix(val, "http://") || strings.HasPrefix(val, "mailto:")) {
				return fmt.Errorf("<a href=%q> links to a scheme clients drop", val)
			}
		case tag == "code" && name == "class":
			if !strings.HasPrefix(val, "language-") {
				return fmt.Errorf("<code class=%q> is not language-*", val)
			}
		default:
			return fmt.Errorf("<%s> may not carry %s", tag, name)
		}
		attrs = strings.TrimSpace(rest)
	}
	return nil
}
