package render

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// block is one part of a text document: a heading, a paragraph or a table.
// The plain-text and Markdown writers render the same blocks.
type block struct {
	Heading string   // level-Level heading when set
	Level   int      // 1 for the report title, 2 per rank, 3 per section
	Lines   []string // paragraph lines (a list in Markdown when List)
	List    bool
	Table   *table
}

// table is a table of strings; Right marks right-aligned (numeric) columns.
type table struct {
	Header []string
	Right  []bool
	Rows   [][]string
}

// writeText writes blocks as an aligned plain-text report.
func writeText(w io.Writer, blocks []block) error {
	var b strings.Builder
	for _, bl := range blocks {
		switch {
		case bl.Heading != "":
			textHeading(&b, bl)
		case bl.Table != nil:
			textTable(&b, bl.Table)
		default:
			for _, l := range bl.Lines {
				if bl.List {
					b.WriteString("  - ")
				}
				b.WriteString(l)
				b.WriteByte('\n')
			}
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

func textHeading(b *strings.Builder, bl block) {
	b.WriteString(bl.Heading)
	b.WriteByte('\n')
	under := "-"
	if bl.Level <= 2 {
		under = "="
	}
	b.WriteString(strings.Repeat(under, utf8.RuneCountInString(bl.Heading)))
	b.WriteByte('\n')
}

// textTable writes t with columns padded to their widest cell.
func textTable(b *strings.Builder, t *table) {
	width := make([]int, len(t.Header))
	all := append([][]string{t.Header}, t.Rows...)
	for _, row := range all {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range all {
		var line strings.Builder
		for i, c := range row {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if t.right(i) {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
}

func (t *table) right(i int) bool { return i < len(t.Right) && t.Right[i] }

// writeMarkdown writes blocks as GitHub-flavoured Markdown.
func writeMarkdown(w io.Writer, blocks []block) error {
	var b strings.Builder
	for _, bl := range blocks {
		switch {
		case bl.Heading != "":
			fmt.Fprintf(&b, "%s %s\n\n", strings.Repeat("#", bl.Level), mdEscape(bl.Heading))
		case bl.Table != nil:
			mdTable(&b, bl.Table)
		default:
			// Lines of a paragraph are separate paragraphs in Markdown, or
			// a renderer would join them into one line.
			for _, l := range bl.Lines {
				if bl.List {
					b.WriteString("- ")
				}
				b.WriteString(mdEscape(l))
				if !bl.List {
					b.WriteString("\n")
				}
				b.WriteString("\n")
			}
			if bl.List {
				b.WriteString("\n")
			}
		}
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

func mdTable(b *strings.Builder, t *table) {
	mdRow(b, t.Header)
	b.WriteString("|")
	for i := range t.Header {
		if t.right(i) {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		mdRow(b, r)
	}
	b.WriteString("\n")
}

func mdRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" ")
		b.WriteString(strings.ReplaceAll(mdEscape(c), "|", `\|`))
		b.WriteString(" |")
	}
	b.WriteString("\n")
}

// mdEscape escapes characters that Markdown would read as formatting in
// kernel names and messages (templates, underscores, asterisks). A ">" is
// left as it is unless it starts the text (a quote): "<" alone opens HTML,
// and "->" in a headline should read as written.
func mdEscape(s string) string {
	r := strings.NewReplacer(
		`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;",
		"[", `\[`, "]", `\]`, "#", `\#`,
	)
	s = r.Replace(s)
	if strings.HasPrefix(s, ">") {
		s = `\` + s
	}
	return s
}
