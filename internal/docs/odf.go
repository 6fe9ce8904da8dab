package docs

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// OpenDocument (ISO/IEC 26300): ODT text with headings and tables, ODS
// sheets as text tables. Both keep their body in content.xml.

func extractODT(data []byte, lim Limits, b *builder) error {
	return extractODF(data, lim, b, false)
}

func extractODS(data []byte, lim Limits, b *builder) error {
	return extractODF(data, lim, b, true)
}

// maxRepeat bounds table:number-columns/rows-repeated, which a file can set
// to a million for one empty cell.
const maxRepeat = 100

func extractODF(data []byte, lim Limits, b *builder, sheets bool) error {
	z, err := openZip(data, lim)
	if err != nil {
		return err
	}
	content, err := z.read("content.xml")
	if err != nil {
		return fmt.Errorf("not an OpenDocument file: %w", err)
	}
	if !sheets {
		b.page("")
	}
	d := xmlDecoder(content)
	var para strings.Builder
	var cells []string
	tableDepth := 0
	headingLvl := 0
	textDepth := 0 // inside text:p or text:h
	colRepeat := 1
	rowRepeat := 1
	flushPara := func() {
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
		if headingLvl > 0 {
			b.heading(text, headingLvl)
		} else if strings.TrimSpace(text) != "" {
			b.write(text + "\n")
		}
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading content.xml: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "p":
				textDepth++
			case "h":
				textDepth++
				headingLvl, _ = strconv.Atoi(attr(t, "outline-level"))
				headingLvl = max(1, min(headingLvl, 9))
			case "s":
				if textDepth > 0 {
					n, _ := strconv.Atoi(attr(t, "c"))
					para.WriteString(strings.Repeat(" ", max(1, min(n, 100))))
				}
			case "tab":
				para.WriteByte('\t')
			case "line-break":
				para.WriteByte('\n')
			case "table":
				tableDepth++
				if sheets && tableDepth == 1 {
					name := attr(t, "name")
					b.page(name)
					b.heading(name, 1)
				}
			case "table-row":
				cells = cells[:0]
				rowRepeat, _ = strconv.Atoi(attr(t, "number-rows-repeated"))
				rowRepeat = max(1, min(rowRepeat, maxRepeat))
			case "table-cell", "covered-table-cell":
				colRepeat, _ = strconv.Atoi(attr(t, "number-columns-repeated"))
				colRepeat = max(1, min(colRepeat, maxRepeat))
				cells = append(cells, "")
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "p", "h":
				textDepth--
				flushPara()
				headingLvl = 0
			case "table-cell", "covered-table-cell":
				if len(cells) > 0 && cells[len(cells)-1] != "" {
					for range colRepeat - 1 {
						cells = append(cells, cells[len(cells)-1])
					}
				}
			case "table-row":
				if strings.TrimSpace(strings.Join(cells, "")) != "" {
					for range rowRepeat {
						writeRow(b, append([]string(nil), cells...))
					}
				}
			case "table":
				tableDepth--
				if tableDepth == 0 && !sheets {
					b.write("\n")
				}
			}
		case xml.CharData:
			if textDepth > 0 {
				para.Write(t)
			}
		}
		if b.full {
			break
		}
	}
	return nil
}
