package docs

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Office Open XML (ECMA-376): DOCX body text with headings and tables,
// PPTX slides in order with their titles, XLSX sheets as text tables.

func extractDOCX(data []byte, lim Limits, b *builder) error {
	z, err := openZip(data, lim)
	if err != nil {
		return err
	}
	body, err := z.read("word/document.xml")
	if err != nil {
		return fmt.Errorf("not a Word document: %w", err)
	}
	b.page("")
	d := xmlDecoder(body)
	var para strings.Builder
	style := ""
	var cells []string // cells of the current table row
	tableDepth := 0
	inText := false
	endPara := func() {
		text := para.String()
		para.Reset()
		if tableDepth > 0 {
			if len(cells) > 0 && text != "" {
				if cells[len(cells)-1] != "" {
					cells[len(cells)-1] += " "
				}
				cells[len(cells)-1] += text
			}
			return
		}
		if lvl := headingLevel(style); lvl > 0 {
			b.heading(text, lvl)
		} else if strings.TrimSpace(text) != "" {
			b.write(text + "\n")
		}
		style = ""
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading word/document.xml: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "t":
				inText = true
			case "tab":
				para.WriteByte('\t')
			case "br", "cr":
				para.WriteByte('\n')
			case "pStyle":
				style = attr(t, "val")
			case "tbl":
				tableDepth++
			case "tr":
				cells = cells[:0]
			case "tc":
				cells = append(cells, "")
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				endPara()
			case "tr":
				if tableDepth > 0 {
					writeRow(b, cells)
				}
			case "tbl":
				tableDepth--
				if tableDepth == 0 {
					b.write("\n")
				}
			}
		case xml.CharData:
			if inText {
				para.Write(t)
			}
		}
		if b.full {
			break
		}
	}
	return nil
}

// headingLevel reads Word's built-in heading styles ("Heading1", "Title").
func headingLevel(style string) int {
	s := strings.ToLower(style)
	switch {
	case s == "title":
		return 1
	case strings.HasPrefix(s, "heading"):
		if n, err := strconv.Atoi(strings.TrimPrefix(s, "heading")); err == nil && n >= 1 && n <= 9 {
			return n
		}
	}
	return 0
}

// writeRow writes one table row as cells joined by " | ", skipping empty rows.
func writeRow(b *builder, cells []string) {
	for len(cells) > 0 && strings.TrimSpace(cells[len(cells)-1]) == "" {
		cells = cells[:len(cells)-1]
	}
	if len(cells) == 0 {
		return
	}
	for i := range cells {
		cells[i] = strings.Join(strings.Fields(cells[i]), " ")
	}
	b.write(strings.Join(cells, " | ") + "\n")
}

var numRE = lazyre.New(`(\d+)`)

// byNumber sorts part names like slide2.xml, slide10.xml by their number.
func byNumber(names []string) {
	num := func(s string) int {
		m := numRE.FindAllString(s, -1)
		if len(m) == 0 {
			return 0
		}
		n, _ := strconv.Atoi(m[len(m)-1])
		return n
	}
	sort.SliceStable(names, func(i, j int) bool { return num(names[i]) < num(names[j]) })
}

func extractPPTX(data []byte, lim Limits, b *builder) error {
	z, err := openZip(data, lim)
	if err != nil {
		return err
	}
	slides := z.names("ppt/slides/slide", ".xml")
	if len(slides) == 0 {
		return errors.New("not a PowerPoint presentation: it has no slides")
	}
	byNumber(slides)
	for i, name := range slides {
		raw, err := z.read(name)
		if err != nil {
			return err
		}
		b.page(fmt.Sprintf("slide %d", i+1))
		if err := slideText(raw, b); err != nil {
			b.warn(fmt.Sprintf("slide %d could not be read: %v", i+1, err))
		}
		if b.full {
			break
		}
	}
	return nil
}

func slideText(raw []byte, b *builder) error {
	d := xmlDecoder(raw)
	var para strings.Builder
	inText, inTitle := false, false
	shapeDepth := 0 // depth of p:sp nesting
	titleDepth := -1
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "sp":
				shapeDepth++
			case "ph":
				if typ := attr(t, "type"); typ == "title" || typ == "ctrTitle" {
					inTitle, titleDepth = true, shapeDepth
				}
			case "t":
				inText = true
			case "br":
				para.WriteByte('\n')
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				text := para.String()
				para.Reset()
				if inTitle {
					b.heading(text, 1)
				} else if strings.TrimSpace(text) != "" {
					b.write(text + "\n")
				}
			case "sp":
				if inTitle && shapeDepth == titleDepth {
					inTitle = false
				}
				shapeDepth--
			}
		case xml.CharData:
			if inText {
				para.Write(t)
			}
		}
	}
}

type relsFile struct {
	Rels []struct {
		ID     string `xml:"Id,attr"`
		Target string `xml:"Target,attr"`
	} `xml:"Relationship"`
}

func extractXLSX(data []byte, lim Limits, b *builder) error {
	z, err := openZip(data, lim)
	if err != nil {
		return err
	}
	wbRaw, err := z.read("xl/workbook.xml")
	if err != nil {
		return fmt.Errorf("not an Excel workbook: %w", err)
	}
	var wb struct {
		Sheets []struct {
			Name string `xml:"name,attr"`
			RID  string `xml:"http://schemas.openxmlformats.org/officeDocument/2006/relationships id,attr"`
		} `xml:"sheets>sheet"`
	}
	if err := xml.Unmarshal(wbRaw, &wb); err != nil {
		return fmt.Errorf("reading xl/workbook.xml: %w", err)
	}
	targets := map[string]string{}
	if raw, err := z.read("xl/_rels/workbook.xml.rels"); err == nil {
		var rels relsFile
		if xml.Unmarshal(raw, &rels) == nil {
			for _, r := range rels.Rels {
				targets[r.ID] = resolveRel("xl/workbook.xml", r.Target)
			}
		}
	}
	var shared []string
	if raw, err := z.read("xl/sharedStrings.xml"); err == nil {
		shared, err = sharedStrings(raw)
		if err != nil {
			return err
		}
	}
	for i, s := range wb.Sheets {
		part := targets[s.RID]
		if part == "" {
			part = fmt.Sprintf("xl/worksheets/sheet%d.xml", i+1)
		}
		raw, err := z.read(part)
		if err != nil {
			b.warn(fmt.Sprintf("sheet %q could not be read: %v", s.Name, err))
			continue
		}
		b.page(s.Name)
		b.heading(s.Name, 1)
		if err := sheetText(raw, shared, b); err != nil {
			b.warn(fmt.Sprintf("sheet %q could not be read: %v", s.Name, err))
		}
		if b.full {
			break
		}
	}
	return nil
}

func sharedStrings(raw []byte) ([]string, error) {
	d := xmlDecoder(raw)
	var out []string
	var cur strings.Builder
	inT := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading xl/sharedStrings.xml: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "t" {
				inT = true
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inT = false
			case "si":
				out = append(out, cur.String())
				cur.Reset()
			}
		case xml.CharData:
			if inT {
				cur.Write(t)
			}
		}
	}
}

func sheetText(raw []byte, shared []string, b *builder) error {
	d := xmlDecoder(raw)
	var cells []string
	var val strings.Builder
	typ := ""
	inV := false
	col := 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "row":
				cells = cells[:0]
			case "c":
				typ = attr(t, "t")
				val.Reset()
				col = colIndex(attr(t, "r"))
			case "v", "t":
				inV = true
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "v", "t":
				inV = false
			case "c":
				v := val.String()
				if typ == "s" {
					if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 && n < len(shared) {
						v = shared[n]
					}
				}
				// Place the cell in its column; gaps stay empty, bounded so
				// a cell at XFD1048576 cannot allocate a huge row.
				if col >= 0 && col < 1000 {
					for len(cells) < col {
						cells = append(cells, "")
					}
				}
				cells = append(cells, v)
			case "row":
				writeRow(b, cells)
				if b.full {
					return nil
				}
			}
		case xml.CharData:
			if inV {
				val.Write(t)
			}
		}
	}
}

// colIndex turns a cell reference's letters (B7 → 1) into a column index,
// or -1 when there is none.
func colIndex(ref string) int {
	n := 0
	seen := false
	for _, r := range ref {
		if r < 'A' || r > 'Z' {
			break
		}
		seen = true
		n = n*26 + int(r-'A'+1)
		if n > 20000 {
			return -1
		}
	}
	if !seen {
		return -1
	}
	return n - 1
}
