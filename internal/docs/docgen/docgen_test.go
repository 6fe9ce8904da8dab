package docgen

import (
	"context"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/docs"
)

// The generated documents are real: the document reader finds their text.
func TestDocumentsRead(t *testing.T) {
	for _, c := range []struct {
		f    docs.Format
		b    []byte
		want string
	}{
		{docs.PDF, PDF([]string{"Invoice (INV-7)", "Due: 3 March"}), "Invoice (INV-7)"},
		{docs.DOCX, DOCX([]string{"Lease <12>", "Notice: 3 months"}), "Lease <12>"},
	} {
		d, err := docs.InProcess{}.Extract(context.Background(), c.b, c.f)
		if err != nil {
			t.Fatalf("%s: %v", c.f, err)
		}
		var text strings.Builder
		for _, p := range d.Pages {
			text.WriteString(p.Text)
		}
		if !strings.Contains(text.String(), c.want) {
			t.Fatalf("%s: text %q, want %q", c.f, text.String(), c.want)
		}
	}
}
