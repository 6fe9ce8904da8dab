package journal

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/emersion/go-message/mail"
)

// BuildMessage renders a draft as an RFC 5322 message (UTF-8 text/plain,
// quoted-printable). Bcc is deliberately absent from the header.
func BuildMessage(d Draft, date time.Time) ([]byte, error) {
	var h mail.Header
	h.SetDate(date)
	h.SetSubject(d.Subject)
	h.SetMessageID(d.MessageID)
	h.SetAddressList("From", addrs([]string{d.From}))
	h.SetAddressList("To", addrs(d.To))
	if len(d.Cc) > 0 {
		h.SetAddressList("Cc", addrs(d.Cc))
	}
	if d.InReplyTo != "" {
		h.SetMsgIDList("In-Reply-To", []string{d.InReplyTo})
		refs := d.References
		if len(refs) == 0 || refs[len(refs)-1] != d.InReplyTo {
			refs = append(append([]string(nil), refs...), d.InReplyTo)
		}
		h.SetMsgIDList("References", refs)
	}
	h.SetContentType("text/plain", map[string]string{"charset": "utf-8"})
	h.Set("Content-Transfer-Encoding", "quoted-printable")
	h.Set("MIME-Version", "1.0")
	var buf bytes.Buffer
	w, err := mail.CreateSingleInlineWriter(&buf, h)
	if err != nil {
		return nil, fmt.Errorf("building message: %w", err)
	}
	if _, err := io.WriteString(w, d.Body); err != nil {
		return nil, fmt.Errorf("building message: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("building message: %w", err)
	}
	return buf.Bytes(), nil
}

func addrs(list []string) []*mail.Address {
	out := make([]*mail.Address, 0, len(list))
	for _, a := range list {
		out = append(out, &mail.Address{Address: a})
	}
	return out
}
