package email

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"strings"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/hestia-dev/hestia/internal/channels"
)

// mailFile is a part of a message offered to the relay as an attachment.
// Parts are found in the message's BODYSTRUCTURE (RFC 3501 §7.4.2, RFC
// 9051 §7.5.2), which the server sends whole however large the message:
// the first 2 MB read to classify a message may not reach them.
type mailFile struct {
	part     []int // the part's section number ("2.1" is [2 1])
	name     string
	mime     string
	encoding string // Content-Transfer-Encoding, lower case
	size     int64  // decoded bytes, estimated from below
}

// skippedTypes are parts that are no file for the assistant: the
// signatures of signed mail.
var skippedTypes = map[string]bool{
	"application/pgp-signature": true, "application/pkcs7-signature": true, "application/x-pkcs7-signature": true,
}

// filesOf lists a message's attachments: every single part except the
// text the message says (text/plain and text/html parts that are neither
// attachments nor named), resources embedded in an HTML body (a part with
// a Content-ID inside multipart/related, unless marked as an attachment),
// signatures, and — when the message is offered as a voice note — its
// first audio part. A forwarded message (message/rfc822) is one file.
func filesOf(bs imap.BodyStructure, skipAudio bool) []mailFile {
	var out []mailFile
	var walk func(bs imap.BodyStructure, path []int, related bool)
	walk = func(bs imap.BodyStructure, path []int, related bool) {
		switch p := bs.(type) {
		case *imap.BodyStructureMultiPart:
			for i, c := range p.Children {
				walk(c, append(append([]int(nil), path...), i+1), strings.EqualFold(p.Subtype, "related"))
			}
		case *imap.BodyStructureSinglePart:
			if len(path) == 0 {
				path = []int{1} // a message that is one part: its body is section 1
			}
			mt := p.MediaType()
			disp := ""
			if d := p.Disposition(); d != nil {
				disp = strings.ToLower(d.Value)
			}
			name := decodeWords(p.Filename())
			switch {
			case (mt == "text/plain" || mt == "text/html") && disp != "attachment" && name == "":
				return // the message's text
			case related && p.ID != "" && disp != "attachment":
				return // an image the HTML shows
			case skippedTypes[mt]:
				return
			case skipAudio && isAudio(mt, name):
				skipAudio = false // the voice note
				return
			}
			enc := strings.ToLower(strings.TrimSpace(p.Encoding))
			out = append(out, mailFile{part: path, name: name, mime: mt, encoding: enc, size: decodedSize(int64(p.Size), enc)})
		}
	}
	if bs != nil {
		walk(bs, nil, false)
	}
	return out
}

// decodeWords decodes RFC 2047 encoded words in a file name, which many
// mailers use in place of RFC 2231.
func decodeWords(s string) string {
	if !strings.Contains(s, "=?") {
		return s
	}
	if d, err := new(mime.WordDecoder).DecodeHeader(s); err == nil {
		return d
	}
	return s
}

// decodedSize estimates a part's decoded size from its encoded size, from
// below, so the relay never refuses a file for its estimate: base64 holds
// at most 3 bytes per 4 characters, quoted-printable at least one byte per
// three.
func decodedSize(encoded int64, enc string) int64 {
	switch enc {
	case "base64":
		return max(encoded*57/78-3, 0) // 76-character lines and CRLF, less padding
	case "quoted-printable":
		return encoded / 3
	}
	return encoded
}

// encodedLimit is the most a part of limit decoded bytes can take encoded
// (with room for short lines and whitespace): more than that is a part
// over the limit, so more is never downloaded.
func encodedLimit(limit int64, enc string) int64 {
	switch enc {
	case "base64":
		return limit*2 + 1024
	case "quoted-printable":
		return limit*4 + 1024
	}
	return limit + 1
}

// decodePart undoes a part's Content-Transfer-Encoding.
func decodePart(raw []byte, enc string) ([]byte, error) {
	switch enc {
	case "base64":
		clean := bytes.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
				return -1
			}
			return r
		}, raw)
		out := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
		n, err := base64.StdEncoding.Decode(out, clean)
		if err != nil {
			return nil, fmt.Errorf("the part is not valid base64: %w", err)
		}
		return out[:n], nil
	case "quoted-printable":
		out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return nil, fmt.Errorf("the part is not valid quoted-printable: %w", err)
		}
		return out, nil
	case "", "7bit", "8bit", "binary":
		return raw, nil
	}
	return nil, &channels.RefusedError{Reason: fmt.Sprintf("it is encoded as %q, which I cannot read", enc), Err: errors.New("unknown transfer encoding")}
}

// partFetcher downloads one part on its own connection (the relay calls
// it while the scanner's connection is busy with the handler, or after),
// at most what limit decoded bytes can take encoded.
func (s *scanner) partFetcher(uid imap.UID, f mailFile) func(ctx context.Context, limit int64) ([]byte, error) {
	a, validity := s.a, s.validity
	return func(ctx context.Context, limit int64) ([]byte, error) {
		if f.size > limit {
			return nil, fmt.Errorf("email attachment: %w (about %d bytes, at most %d)", channels.ErrTooLarge, f.size, limit)
		}
		maxRaw := encodedLimit(limit, f.encoding)
		var raw []byte
		err := a.session(ctx, 5*a.cfg.Timeout, func(c *imapclient.Client) error {
			sel, err := c.Select(a.cfg.Mailbox, &imap.SelectOptions{ReadOnly: true}).Wait()
			if err != nil {
				return fmt.Errorf("selecting %s: %w", a.cfg.Mailbox, err)
			}
			if sel.UIDValidity != validity {
				return errors.New("the attachment's mailbox changed (UIDVALIDITY) before it was fetched")
			}
			sec := &imap.FetchItemBodySection{Part: f.part, Peek: true, Partial: &imap.SectionPartial{Size: maxRaw}}
			msgs, err := c.Fetch(imap.UIDSetNum(uid), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{sec}}).Collect()
			if err != nil {
				return fmt.Errorf("fetching the attachment: %w", err)
			}
			if len(msgs) == 0 || len(msgs[0].BodySection) == 0 {
				return errors.New("the attachment's message is no longer in the mailbox")
			}
			raw = msgs[0].BodySection[0].Bytes
			return nil
		})
		if err != nil {
			return nil, err
		}
		if int64(len(raw)) >= maxRaw {
			return nil, fmt.Errorf("email attachment: %w (over %d bytes encoded)", channels.ErrTooLarge, maxRaw)
		}
		data, err := decodePart(raw, f.encoding)
		if err != nil {
			return nil, err
		}
		if int64(len(data)) > limit {
			return nil, fmt.Errorf("email attachment: %w (over %d bytes)", channels.ErrTooLarge, limit)
		}
		return data, nil
	}
}
