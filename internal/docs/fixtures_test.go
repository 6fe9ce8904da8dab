package docs

import (
	"archive/zip"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated fixtures in testdata/")

// buildPDF writes a minimal PDF (ISO 32000-1 §7.5) with one Helvetica text
// page per entry of pages; each page's lines are shown with Tj and moved
// with Td. An empty pages entry makes a page with no content stream.
func buildPDF(pages [][]string, outline []string) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) int {
		offsets = append(offsets, b.Len())
		n := len(offsets)
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", n, body)
		return n
	}
	b.WriteString("%PDF-1.4\n")
	// 1 catalog, 2 pages, 3 font, 4 outline root (optional), then pages.
	nPages := len(pages)
	first := 5
	kids := make([]string, nPages)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", first+2*i)
	}
	cat := "<< /Type /Catalog /Pages 2 0 R >>"
	if len(outline) > 0 {
		cat = "<< /Type /Catalog /Pages 2 0 R /Outlines 4 0 R >>"
	}
	obj(cat)
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), nPages))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	outlineStart := first + 2*nPages
	if len(outline) > 0 {
		obj(fmt.Sprintf("<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>", outlineStart, outlineStart+len(outline)-1, len(outline)))
	} else {
		obj("<< >>")
	}
	for i, lines := range pages {
		var cs strings.Builder
		if len(lines) > 0 {
			cs.WriteString("BT /F1 11 Tf 72 760 Td 14 TL\n")
			for j, l := range lines {
				l = strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`).Replace(l)
				if j == 0 {
					fmt.Fprintf(&cs, "(%s) Tj\n", l)
				} else {
					fmt.Fprintf(&cs, "0 -14 Td (%s) Tj\n", l)
				}
			}
			cs.WriteString("ET")
		}
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", first+2*i+1))
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", cs.Len(), cs.String()))
	}
	for i, t := range outline {
		links := ""
		if i > 0 {
			links += fmt.Sprintf(" /Prev %d 0 R", outlineStart+i-1)
		}
		if i < len(outline)-1 {
			links += fmt.Sprintf(" /Next %d 0 R", outlineStart+i+1)
		}
		obj(fmt.Sprintf("<< /Title (%s) /Parent 4 0 R%s >>", t, links))
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

// buildZip writes a ZIP with the given entries in order.
func buildZip(entries ...[2]string) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, e := range entries {
		f, err := w.Create(e[0])
		if err != nil {
			panic(err)
		}
		f.Write([]byte(e[1]))
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return b.Bytes()
}

const wNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`

func docxPara(style, text string) string {
	ps := ""
	if style != "" {
		ps = `<w:pPr><w:pStyle w:val="` + style + `"/></w:pPr>`
	}
	return `<w:p>` + ps + `<w:r><w:t xml:space="preserve">` + text + `</w:t></w:r></w:p>`
}

func contractDOCX() []byte {
	body := docxPara("Title", "Service Agreement") +
		docxPara("", "This agreement is made between Acme GmbH and the Client.") +
		docxPara("Heading1", "1. Services") +
		docxPara("", "Acme provides hosting services as described in Annex A.") +
		docxPara("Heading1", "2. Termination") +
		docxPara("", "Either party may terminate this agreement with three months' notice to the end of a calendar quarter. Termination for cause is possible without notice.") +
		`<w:tbl><w:tr><w:tc>` + docxPara("", "Fee") + `</w:tc><w:tc>` + docxPara("", "100 EUR") + `</w:tc></w:tr>` +
		`<w:tr><w:tc>` + docxPara("", "Term") + `</w:tc><w:tc>` + docxPara("", "24 months") + `</w:tc></w:tr></w:tbl>`
	return buildZip(
		[2]string{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		[2]string{"word/document.xml", `<?xml version="1.0" encoding="UTF-8"?><w:document ` + wNS + `><w:body>` + body + `</w:body></w:document>`},
	)
}

func buildPPTX() []byte {
	slide := func(title, text string) string {
		return `<?xml version="1.0"?><p:sld xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><p:cSld><p:spTree>` +
			`<p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>` + title + `</a:t></a:r></a:p></p:txBody></p:sp>` +
			`<p:sp><p:nvSpPr><p:nvPr/></p:nvSpPr><p:txBody><a:p><a:r><a:t>` + text + `</a:t></a:r></a:p></p:txBody></p:sp>` +
			`</p:spTree></p:cSld></p:sld>`
	}
	return buildZip(
		[2]string{"ppt/slides/slide10.xml", slide("Roadmap", "Ship the beta in spring.")},
		[2]string{"ppt/slides/slide1.xml", slide("Quarterly Review", "Revenue grew by 12 percent.")},
		[2]string{"ppt/slides/slide2.xml", slide("Risks", "Supplier delays remain the main risk.")},
	)
}

func buildXLSX() []byte {
	return buildZip(
		[2]string{"xl/workbook.xml", `<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Budget" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		[2]string{"xl/_rels/workbook.xml.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Target="worksheets/sheet1.xml"/></Relationships>`},
		[2]string{"xl/sharedStrings.xml", `<?xml version="1.0"?><sst><si><t>Item</t></si><si><t>Cost</t></si><si><t>Rent</t></si><si><r><t>Pow</t></r><r><t>er</t></r></si></sst>`},
		[2]string{"xl/worksheets/sheet1.xml", `<?xml version="1.0"?><worksheet><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row><row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2"><v>1200</v></c></row><row r="3"><c r="A3" t="s"><v>3</v></c><c r="C3"><v>80</v></c></row></sheetData></worksheet>`},
	)
}

const odfNS = `xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"`

func buildODT() []byte {
	return buildZip(
		[2]string{"mimetype", "application/vnd.oasis.opendocument.text"},
		[2]string{"content.xml", `<?xml version="1.0"?><office:document-content ` + odfNS + `><office:body><office:text>` +
			`<text:h text:outline-level="1">Minutes</text:h><text:p>The board met on <text:span>Monday</text:span>.<text:s text:c="2"/>All present.</text:p>` +
			`<text:h text:outline-level="2">Decisions</text:h><text:p>Budget approved.</text:p></office:text></office:body></office:document-content>`},
	)
}

func buildODS() []byte {
	return buildZip(
		[2]string{"mimetype", "application/vnd.oasis.opendocument.spreadsheet"},
		[2]string{"content.xml", `<?xml version="1.0"?><office:document-content ` + odfNS + `><office:body><office:spreadsheet>` +
			`<table:table table:name="Inventory"><table:table-row><table:table-cell><text:p>Widget</text:p></table:table-cell><table:table-cell><text:p>42</text:p></table:table-cell></table:table-row>` +
			`<table:table-row table:number-rows-repeated="1048000"><table:table-cell table:number-columns-repeated="16384"/></table:table-row></table:table>` +
			`</office:spreadsheet></office:body></office:document-content>`},
	)
}

func buildEPUB() []byte {
	return buildZip(
		[2]string{"mimetype", "application/epub+zip"},
		[2]string{"META-INF/container.xml", `<?xml version="1.0"?><container><rootfiles><rootfile full-path="OEBPS/content.opf"/></rootfiles></container>`},
		[2]string{"OEBPS/content.opf", `<?xml version="1.0"?><package><manifest><item id="c1" href="ch1.xhtml"/><item id="c2" href="ch2.xhtml"/></manifest><spine><itemref idref="c2"/><itemref idref="c1"/></spine></package>`},
		[2]string{"OEBPS/ch1.xhtml", `<html><body><h1>Chapter Two</h1><p>The ship sailed at dawn.</p></body></html>`},
		[2]string{"OEBPS/ch2.xhtml", `<html><body><h1>Chapter One</h1><p>Call me Ishmael.</p></body></html>`},
	)
}

const sampleHTML = `<!doctype html><html><head><title>T</title><style>body{color:red}</style><script>alert("pwned")</script></head>
<body><h1>Release notes</h1><p>Version <b>2.0</b> adds sync.</p><noscript>enable js</noscript>
<table><tr><th>Key</th><th>Value</th></tr><tr><td>mode</td><td>fast</td></tr></table>
<script>document.write("hidden")</script><h2>Fixes</h2><ul><li>Crash on start</li><li>Slow search</li></ul></body></html>`

const sampleRTF = `{\rtf1\ansi\deff0{\fonttbl{\f0 Times;}}{\colortbl;\red0\green0\blue0;}{\*\generator Writer;}
\pard Dear customer,\par
your order no. 7 is ready. Caf\'e9 \u8364?5 paid.\par
{\info{\title Secret title}}Regards\par}`

const sampleMD = "# Notes\n\nSome text.\n\n```\n# not a heading\n```\n\n## Next steps\n\n- call Bob\n"

// fixtures are the generated test documents, by file name.
func fixtures() map[string][]byte {
	contract := [][]string{
		{"SERVICE CONTRACT", "between Acme GmbH and Jane Doe"},
		{"1. Scope", "Acme provides hosting services."},
		{"7. Termination", "Either party may terminate this contract with three months notice.", "Termination for cause requires written notice."},
	}
	return map[string][]byte{
		"contract.pdf":  buildPDF(contract, []string{"7. Termination"}),
		"scanned.pdf":   buildPDF([][]string{{}, {}}, nil),
		"contract.docx": contractDOCX(),
		"slides.pptx":   buildPPTX(),
		"budget.xlsx":   buildXLSX(),
		"minutes.odt":   buildODT(),
		"inventory.ods": buildODS(),
		"book.epub":     buildEPUB(),
		"notes.html":    []byte(sampleHTML),
		"letter.rtf":    []byte(sampleRTF),
		"notes.md":      []byte(sampleMD),
		"plain.txt":     []byte("line one\r\nline two\n\n\n\nline three\x00\n"),
		"zipbomb.docx":  zipBomb(),
		"loop.pdf":      loopPDF(),
	}
}

// zipBomb is a DOCX whose document.xml inflates to 80 MiB of zeros.
func zipBomb() []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	f, _ := w.Create("word/document.xml")
	chunk := make([]byte, 1<<20)
	for range 80 {
		f.Write(chunk)
	}
	w.Close()
	return b.Bytes()
}

func manyEntries(n int) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for i := range n {
		w.Create(fmt.Sprintf("f%d", i))
	}
	w.Close()
	return b.Bytes()
}

// loopPDF has a page tree whose only kid is the tree itself.
func loopPDF() []byte {
	var b bytes.Buffer
	var offs []int
	add := func(s string) {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offs), s)
	}
	b.WriteString("%PDF-1.4\n")
	add("<< /Type /Catalog /Pages 2 0 R >>")
	add("<< /Type /Pages /Kids [2 0 R] /Count 1 >>")
	x := b.Len()
	fmt.Fprintf(&b, "xref\n0 3\n0000000000 65535 f \n%010d 00000 n \n%010d 00000 n \ntrailer\n<< /Size 3 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", offs[0], offs[1], x)
	return b.Bytes()
}

func TestWriteFixtures(t *testing.T) {
	if !*update {
		t.Skip("run with -update to regenerate testdata/")
	}
	for name, data := range fixtures() {
		if err := os.WriteFile(filepath.Join("testdata", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fixture reads a generated fixture from testdata/.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("%v (run go test -run TestWriteFixtures -update)", err)
	}
	return b
}
