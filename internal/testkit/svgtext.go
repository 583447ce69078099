package testkit

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// SVGText returns the character data of an SVG image, each piece trimmed and
// on its own line, or an error when svg is not well-formed XML. Tests and
// tools use it to check what a chart says.
func SVGText(svg []byte) (string, error) {
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var b strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return b.String(), nil
		}
		if err != nil {
			return "", fmt.Errorf("SVG is not XML: %w", err)
		}
		if cd, ok := tok.(xml.CharData); ok {
			if s := bytes.TrimSpace(cd); len(s) > 0 {
				b.Write(s)
				b.WriteByte('\n')
			}
		}
	}
}
