package email

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/email/emailtest"
)

func single(typ, sub, enc string, size uint32, disp, filename, cid string) *imap.BodyStructureSinglePart {
	p := &imap.BodyStructureSinglePart{Type: typ, Subtype: sub, Encoding: enc, Size: size, ID: cid, Params: map[string]string{}}
	if disp != "" || filename != "" {
		p.Extended = &imap.BodyStructureSinglePartExt{Disposition: &imap.BodyStructureDisposition{Value: disp, Params: map[string]string{}}}
		if filename != "" {
			p.Extended.Disposition.Params["filename"] = filename
		}
	}
	return p
}

func TestFilesOf(t *testing.T) {
	t.Parallel()
	bs := &imap.BodyStructureMultiPart{Subtype: "mixed", Children: []imap.BodyStructure{
		&imap.BodyStructureMultiPart{Subtype: "related", Children: []imap.BodyStructure{
			&imap.BodyStructureMultiPart{Subtype: "alternative", Children: []imap.BodyStructure{
				single("text", "plain", "7bit", 10, "", "", ""),
				single("text", "html", "quoted-printable", 30, "", "", ""),
			}},
			single("image", "png", "base64", 780, "inline", "logo.png", "<logo@x>"),
		}},
		single("audio", "ogg", "base64", 78, "attachment", "note.ogg", ""),
		single("application", "pdf", "base64", 7800, "attachment", "=?UTF-8?Q?Bericht_K=C3=BCche.pdf?=", ""),
		single("text", "plain", "quoted-printable", 300, "attachment", "notes.txt", ""),
		single("image", "jpeg", "base64", 78, "inline", "IMG_0001.jpg", ""),
		single("application", "pgp-signature", "7bit", 500, "", "signature.asc", ""),
		single("message", "rfc822", "7bit", 900, "", "", ""),
	}}
	got := filesOf(bs, false)
	want := []mailFile{
		{part: []int{2}, name: "note.ogg", mime: "audio/ogg", encoding: "base64", size: 54},
		{part: []int{3}, name: "Bericht Küche.pdf", mime: "application/pdf", encoding: "base64", size: 5697},
		{part: []int{4}, name: "notes.txt", mime: "text/plain", encoding: "quoted-printable", size: 100},
		{part: []int{5}, name: "IMG_0001.jpg", mime: "image/jpeg", encoding: "base64", size: 54},
		{part: []int{7}, name: "", mime: "message/rfc822", encoding: "7bit", size: 900},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("filesOf =\n%+v\nwant\n%+v", got, want)
	}
	// Offered as a voice note, the first audio part is not a file too.
	if got := filesOf(bs, true); len(got) != 4 || got[0].name != "Bericht Küche.pdf" {
		t.Errorf("with a voice note: %+v", got)
	}
	// A message that is one part: section 1.
	if got := filesOf(single("application", "pdf", "base64", 78, "", "a.pdf", ""), false); len(got) != 1 || !reflect.DeepEqual(got[0].part, []int{1}) {
		t.Errorf("single-part message: %+v", got)
	}
	if got := filesOf(single("text", "plain", "7bit", 78, "", "", ""), false); len(got) != 0 {
		t.Errorf("a plain message has files: %+v", got)
	}
	if filesOf(nil, false) != nil {
		t.Error("no structure, files")
	}
}

func TestDecodePart(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("Hestia reads attachments. "), 20)
	b64 := base64.StdEncoding.EncodeToString(data)
	var folded strings.Builder
	for i := 0; i < len(b64); i += 76 {
		folded.WriteString(b64[i:min(i+76, len(b64))] + "\r\n")
	}
	for _, c := range []struct {
		raw, enc string
		want     []byte
		err      bool
	}{
		{folded.String(), "base64", data, false},
		{"Caf=C3=A9 au lait=\r\n, bitte", "quoted-printable", []byte("Café au lait, bitte"), false},
		{"plain bytes", "7bit", []byte("plain bytes"), false},
		{"plain bytes", "", []byte("plain bytes"), false},
		{"!!!not base64!!!", "base64", nil, true},
		{"begin 644 x", "x-uuencode", nil, true},
	} {
		got, err := decodePart([]byte(c.raw), c.enc)
		if (err != nil) != c.err || (!c.err && !bytes.Equal(got, c.want)) {
			t.Errorf("decodePart(%.20q, %s) = %q, %v", c.raw, c.enc, got, err)
		}
	}
	var re *channels.RefusedError
	if _, err := decodePart([]byte("x"), "x-uuencode"); !errors.As(err, &re) || !strings.Contains(re.Reason, "x-uuencode") {
		t.Errorf("an unknown encoding is not refused with its reason: %v", err)
	}
	// The estimate never exceeds what decoding gives.
	if est := decodedSize(int64(folded.Len()), "base64"); est > int64(len(data)) {
		t.Errorf("base64 estimate %d over the decoded %d", est, len(data))
	}
}

// FuzzDecodePart feeds encoded parts (seeds in testdata/fuzz): decoding
// must not panic, and what comes out is never larger than base64 or
// quoted-printable can make it.
func FuzzDecodePart(f *testing.F) {
	f.Add([]byte("SGVzdGlh\r\n"), "base64")
	f.Add([]byte("a=3Db=\r\nc"), "quoted-printable")
	f.Fuzz(func(t *testing.T, raw []byte, enc string) {
		out, err := decodePart(raw, enc)
		if err != nil {
			return
		}
		if len(out) > len(raw) {
			t.Fatalf("%d bytes decoded from %d", len(out), len(raw))
		}
	})
}

// TestRealServersAttachments offers a message's files to the relay, each
// part fetched and decoded on its own connection while the handler runs.
func TestRealServersAttachments(t *testing.T) {
	t.Parallel()
	r := startRig(t, func(c *Config) { c.AuthservID = "" })
	pdf := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("stream of text "), 400)...)
	type fetched struct {
		data []byte
		err  error
	}
	var got []fetched
	var tooBig error
	r.col.mu.Lock()
	r.col.during = func(u channels.Update) {
		for _, a := range u.Attachments {
			data, err := a.Fetch(context.Background(), 1<<20)
			got = append(got, fetched{data, err})
		}
		if len(u.Attachments) > 0 {
			_, tooBig = u.Attachments[0].Fetch(context.Background(), 100)
		}
	}
	r.col.mu.Unlock()
	b64 := base64.StdEncoding.EncodeToString(pdf)
	var folded strings.Builder
	for i := 0; i < len(b64); i += 76 {
		folded.WriteString(b64[i:min(i+76, len(b64))] + "\n")
	}
	raw := "From: " + ownerAddr + "\nTo: " + taggedAddr + "\nSubject: papers\nDate: " + time.Now().Format(time.RFC1123Z) +
		"\nMessage-ID: <att1@owner.example.org>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=outer\n\n" +
		"--outer\nContent-Type: multipart/related; boundary=rel\n\n" +
		"--rel\nContent-Type: text/html; charset=utf-8\n\n<p>Please read these.</p><img src=\"cid:logo@x\">\n" +
		"--rel\nContent-Type: image/png\nContent-ID: <logo@x>\nContent-Transfer-Encoding: base64\n\niVBORw0KGgo=\n--rel--\n" +
		"--outer\nContent-Type: application/pdf\nContent-Disposition: attachment; filename=\"report.pdf\"\nContent-Transfer-Encoding: base64\n\n" + folded.String() +
		"--outer\nContent-Type: text/plain; charset=utf-8\nContent-Disposition: attachment; filename=\"=?UTF-8?Q?K=C3=BCche.txt?=\"\nContent-Transfer-Encoding: quoted-printable\n\nCaf=C3=A9 =\n& cake\n" +
		"--outer--\n"
	emailtest.Submit(t, r.smtp, ownerAddr, []string{taggedAddr}, raw)
	u := r.col.next(t)
	if u.Text != "Please read these." || len(u.Attachments) != 2 {
		t.Fatalf("update = %+v", u)
	}
	a, b := u.Attachments[0], u.Attachments[1]
	if a.Name != "report.pdf" || a.Mime != "application/pdf" || a.Size <= 0 || a.Size > int64(len(pdf)) || b.Name != "Küche.txt" || b.Mime != "text/plain" {
		t.Errorf("attachments %+v %+v", a, b)
	}
	if len(got) != 2 || got[0].err != nil || !bytes.Equal(got[0].data, pdf) || got[1].err != nil || string(got[1].data) != "Café & cake" {
		for i, g := range got {
			t.Errorf("fetch %d: %d bytes %.40q, %v", i, len(g.data), g.data, g.err)
		}
		t.FailNow()
	}
	if !errors.Is(tooBig, channels.ErrTooLarge) {
		t.Errorf("over the limit: %v", tooBig)
	}
}
