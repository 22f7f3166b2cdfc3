package extract

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// csvText renders a CSV (or TSV) file as a Markdown table: the first row is the header, at most
// opt.MaxRows data rows follow, cells are capped and pipes escaped. A file the CSV reader cannot
// parse is returned as plain text rather than failing.
func csvText(data []byte, mt string, opt Options) (Document, error) {
	text := Normalize(string(data))
	comma := ','
	if mt == TypeTSV {
		comma = '\t'
	} else {
		comma = sniffDelimiter(text)
	}
	r := csv.NewReader(strings.NewReader(text))
	r.Comma = comma
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = false

	var (
		header []string
		rows   [][]string
		total  int
		width  int
	)
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// Not really CSV: the raw text is more useful than nothing.
			return Document{MIME: TypeText, Text: text}, nil
		}
		if header == nil {
			header = rec
			width = len(rec)
			continue
		}
		if blankRecord(rec) {
			continue
		}
		total++
		if len(rows) < opt.MaxRows {
			rows = append(rows, rec)
			width = max(width, len(rec))
		}
	}
	if header == nil {
		return Document{MIME: TypeCSV}, nil
	}
	var b strings.Builder
	writeRow := func(rec []string) {
		b.WriteString("|")
		for i := range width {
			cell := ""
			if i < len(rec) {
				cell = rec[i]
			}
			b.WriteString(" ")
			b.WriteString(cleanCell(cell))
			b.WriteString(" |")
		}
		b.WriteString("\n")
	}
	writeRow(header)
	b.WriteString("|")
	for range width {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, rec := range rows {
		writeRow(rec)
	}
	doc := Document{MIME: TypeCSV, TotalRows: total}
	if total > len(rows) {
		doc.Truncated = true
		fmt.Fprintf(&b, "\n[%d more rows not shown: %d of %d data rows]\n", total-len(rows), len(rows), total)
	}
	doc.Text = strings.TrimRight(b.String(), "\n")
	return doc, nil
}

// sniffDelimiter picks the delimiter of the first line: comma, semicolon (European
// spreadsheets) or tab, whichever occurs most outside quotes.
func sniffDelimiter(text string) rune {
	line, _, _ := strings.Cut(text, "\n")
	counts := map[rune]int{}
	inQuote := false
	for _, c := range line {
		switch {
		case c == '"':
			inQuote = !inQuote
		case !inQuote && (c == ',' || c == ';' || c == '\t'):
			counts[c]++
		}
	}
	best, n := ',', counts[',']
	for _, c := range []rune{';', '\t'} {
		if counts[c] > n {
			best, n = c, counts[c]
		}
	}
	return best
}

func blankRecord(rec []string) bool {
	for _, c := range rec {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

// cleanCell puts a cell on one line, escapes pipes and caps its length.
func cleanCell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > maxCellChars {
		s = string([]rune(s)[:maxCellChars-1]) + "…"
	}
	return string(bytes.ReplaceAll([]byte(s), []byte("|"), []byte(`\|`)))
}
