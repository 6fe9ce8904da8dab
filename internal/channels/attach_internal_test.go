package channels

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSafeStem(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, mime, want string }{
		{"report.pdf", "", "report"},
		{"../../etc/passwd", "", "passwd"},
		{`C:\Users\anna\Desktop\tax 2024.xlsx`, "", "tax-2024"},
		{".bashrc", "", "bashrc"},
		{"...hidden.txt", "", "hidden"},
		{"-rf.txt", "", "rf"},
		{"a/b/", "image/png", "image"},
		{"", "video/mp4", "video"},
		{"", "application/pdf", "document"},
		{"", "", "channel"},
		{"Ünïcødé naïve.md", "", "Ünïcødé-naïve"},
		{"bad\x00name\n.txt", "", "bad-name"},
		{"emoji 🎉 party.txt", "", "emoji-party"},
		{"a.tar.gz", "", "a.tar"},
		{strings.Repeat("x", 300) + ".pdf", "", strings.Repeat("x", maxStem)},
		{strings.Repeat("é", 100), "", strings.Repeat("é", maxStem/2)},
	} {
		if got := safeStem(c.in, c.mime); got != c.want {
			t.Errorf("safeStem(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestContentType(t *testing.T) {
	t.Parallel()
	const pdf = "%PDF-1.7\n"
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	zip := "PK\x03\x04\x14\x00\x00\x00\x08\x00"
	ogg := "OggS\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00"
	mp4 := "\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"
	heic := "\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic"
	for _, c := range []struct{ name, claimed, data, mime, ext string }{
		{"a.pdf", "application/pdf", pdf, "application/pdf", ".pdf"},
		{"a.PDF", "", pdf, "application/pdf", ".pdf"},
		{"scan", "application/pdf", pdf, "application/pdf", ".pdf"},
		{"a.pdf", "application/pdf", "<html><body>x</body></html>", "text/html", ".html"},
		{"a.pdf", "application/pdf", "\x00\x01\x02\x03binary", "application/octet-stream", ".bin"},
		{"a.pdf", "", "just some words", "text/plain", ".txt"},
		{"photo", "image/jpeg", png, "image/png", ".png"},
		{"photo.jpg", "image/jpeg", png, "image/png", ".png"},
		{"photo.png", "", png, "image/png", ".png"},
		{"", "image/jpeg", "\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg", ".jpg"},
		{"a.jpeg", "", "\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg", ".jpeg"},
		{"memo.docx", "", zip, "application/vnd.openxmlformats-officedocument.wordprocessingml.document", ".docx"},
		{"book.epub", "", zip, "application/epub+zip", ".epub"},
		{"memo.docx", "", pdf, "application/pdf", ".pdf"},
		{"a.exe", "", zip, "application/zip", ".zip"},
		{"notes.md", "text/markdown", "# Title\n", "text/markdown", ".md"},
		{"data.csv", "", "a,b\n1,2\n", "text/csv", ".csv"},
		{"data.json", "", `{"a":1}`, "application/json", ".json"},
		{"script.sh", "", "#!/bin/sh\necho hi\n", "text/plain", ".sh"},
		{"noext", "", "plain text", "text/plain", ".txt"},
		{"blob", "", "\x00\x01\x02", "application/octet-stream", ".bin"},
		{"pic.heic", "image/heic", heic, "image/heic", ".heic"},
		{"clip.mov", "video/quicktime", mp4, "video/quicktime", ".mov"},
		{"clip", "video/mp4", mp4, "video/mp4", ".mp4"},
		{"song.m4a", "", mp4, "audio/mp4", ".m4a"},
		{"voice.opus", "", ogg, "audio/ogg", ".opus"},
		{"", "", ogg, "audio/ogg", ".ogg"},
		{"a.txt", "", png, "image/png", ".png"},
	} {
		mime, ext := contentType(c.name, c.claimed, []byte(c.data))
		if mime != c.mime || ext != c.ext {
			t.Errorf("contentType(%q, %q) = %q %q, want %q %q", c.name, c.claimed, mime, ext, c.mime, c.ext)
		}
	}
}

func TestHumanSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KB", 120 << 10: "120 KB", 25 << 20: "25.0 MB", 3565158: "3.4 MB"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzSavedName checks that no sender's name or bytes make a saved name
// that leaves its folder, hides itself, or grows without bound.
func FuzzSavedName(f *testing.F) {
	for _, s := range []string{"report.pdf", "../../x", `..\..\y.exe`, ".env", "a\x00b", strings.Repeat("ü", 90) + ".txt", "\u202ecod.exe", "..", "/"} {
		f.Add(s, "application/pdf", []byte("%PDF-"))
	}
	f.Fuzz(func(t *testing.T, name, claimed string, data []byte) {
		stem := safeStem(name, claimed)
		mime, ext := contentType(name, claimed, data)
		full := stem + ext
		if stem == "" || len(stem) > maxStem || !utf8.ValidString(stem) {
			t.Fatalf("stem %q of %q", stem, name)
		}
		if strings.ContainsAny(full, "/\\\x00") || strings.HasPrefix(full, ".") || strings.HasPrefix(full, "-") {
			t.Fatalf("saved name %q of %q", full, name)
		}
		if ext != "" && (!strings.HasPrefix(ext, ".") || len(ext) > 11 || strings.ContainsAny(ext[1:], ". ")) {
			t.Fatalf("extension %q of %q", ext, name)
		}
		if mime == "" || strings.ContainsAny(mime, ";\n") {
			t.Fatalf("content type %q", mime)
		}
	})
}
