package docs

import (
	"encoding/xml"
	"errors"
	"fmt"
	"path"
	"strings"
)

// extractEPUB reads the spine of an EPUB (OCF container → OPF package) in
// reading order; each spine document is a page.
func extractEPUB(data []byte, lim Limits, b *builder) error {
	z, err := openZip(data, lim)
	if err != nil {
		return err
	}
	cont, err := z.read("META-INF/container.xml")
	if err != nil {
		return fmt.Errorf("not an EPUB: %w", err)
	}
	var c struct {
		Rootfiles []struct {
			Path string `xml:"full-path,attr"`
		} `xml:"rootfiles>rootfile"`
	}
	if err := xml.Unmarshal(cont, &c); err != nil || len(c.Rootfiles) == 0 {
		return errors.New("the EPUB container names no package document")
	}
	opfPath := c.Rootfiles[0].Path
	opfRaw, err := z.read(opfPath)
	if err != nil {
		return err
	}
	var opf struct {
		Items []struct {
			ID   string `xml:"id,attr"`
			Href string `xml:"href,attr"`
		} `xml:"manifest>item"`
		Spine []struct {
			IDRef string `xml:"idref,attr"`
		} `xml:"spine>itemref"`
	}
	if err := xml.Unmarshal(opfRaw, &opf); err != nil {
		return fmt.Errorf("reading %s: %w", opfPath, err)
	}
	href := map[string]string{}
	for _, it := range opf.Items {
		href[it.ID] = it.Href
	}
	for i, ref := range opf.Spine {
		h := href[ref.IDRef]
		if h == "" {
			continue
		}
		name := path.Clean(path.Join(path.Dir(opfPath), strings.SplitN(h, "#", 2)[0]))
		raw, err := z.read(name)
		if err != nil {
			b.warn(fmt.Sprintf("chapter %d could not be read: %v", i+1, err))
			continue
		}
		b.page(fmt.Sprintf("chapter %d", i+1))
		htmlText(raw, b)
		if b.full {
			break
		}
	}
	return nil
}
