package docs

import (
	"errors"
	"strconv"
	"strings"

	"golang.org/x/text/encoding/charmap"
)

// rtfSkip are destinations whose content is not document text.
var rtfSkip = map[string]bool{
	"fonttbl": true, "colortbl": true, "stylesheet": true, "info": true, "pict": true, "object": true,
	"header": true, "footer": true, "headerl": true, "headerr": true, "footerl": true, "footerr": true,
	"listtable": true, "listoverridetable": true, "themedata": true, "datastore": true, "latentstyles": true,
	"xmlnstbl": true, "rsidtbl": true, "generator": true, "filetbl": true, "revtbl": true, "fldinst": true,
}

// extractRTF strips RTF control words and groups (RFC-less, per the RTF
// 1.9.1 specification): \par and \line end lines, \'hh is a Windows-1252
// byte, \uN is a Unicode code point followed by \ucN fallback characters.
func extractRTF(data []byte, b *builder) error {
	s := string(data)
	if !strings.HasPrefix(strings.TrimSpace(s), "{\\rtf") {
		return errors.New("not an RTF file (no {\\rtf header)")
	}
	b.page("")
	stack := []rtfState{{uc: 1}}
	cur := func() *rtfState { return &stack[len(stack)-1] }
	var out strings.Builder
	pendingSkip := 0 // fallback chars to drop after \uN
	dec := charmap.Windows1252.NewDecoder()
	emit := func(t string) {
		if pendingSkip > 0 {
			pendingSkip--
			return
		}
		if !cur().skip {
			out.WriteString(t)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '{':
			if len(stack) > 1000 {
				return errors.New("RTF groups nest more than 1000 deep")
			}
			stack = append(stack, *cur())
			if strings.HasPrefix(s[i+1:], "\\*") {
				cur().skip = true
			}
		case '}':
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
		case '\r', '\n':
		case '\\':
			if i+1 >= len(s) {
				break
			}
			n := s[i+1]
			switch {
			case n == '\'' && i+3 < len(s):
				if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
					r, _ := dec.Bytes([]byte{byte(v)})
					emit(string(r))
				}
				i += 3
			case n == '\\' || n == '{' || n == '}':
				emit(string(n))
				i++
			case n == '~':
				emit("\u00a0")
				i++
			case n == '-' || n == '_' || n == '*':
				i++
			case isLetter(n):
				j := i + 1
				for j < len(s) && isLetter(s[j]) {
					j++
				}
				word := s[i+1 : j]
				k := j
				if k < len(s) && (s[k] == '-' || (s[k] >= '0' && s[k] <= '9')) {
					k++
					for k < len(s) && s[k] >= '0' && s[k] <= '9' {
						k++
					}
				}
				param := s[j:k]
				if k < len(s) && s[k] == ' ' {
					k++
				}
				i = k - 1
				pendingSkip = rtfWord(word, param, cur(), emit, pendingSkip)
			default:
				i++
			}
		default:
			emit(string(c))
		}
		if out.Len() > 1<<20 {
			b.write(out.String())
			out.Reset()
			if b.full {
				return nil
			}
		}
	}
	b.write(out.String())
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

type rtfState struct {
	skip bool // inside a destination that is not text
	uc   int  // fallback characters after \uN
}

func rtfWord(word, param string, st *rtfState, emit func(string), pending int) int {
	switch word {
	case "par", "line", "row", "sect", "page":
		emit("\n")
	case "tab", "cell":
		emit("\t")
	case "uc":
		st.uc, _ = strconv.Atoi(param)
	case "u":
		n, _ := strconv.Atoi(param)
		if n < 0 {
			n += 65536
		}
		emit(string(rune(n)))
		return st.uc
	default:
		if rtfSkip[word] {
			st.skip = true
		}
	}
	return pending
}
