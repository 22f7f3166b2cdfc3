package extract

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/ledongthuc/pdf"
)

// wordGap is the TJ displacement (thousandths of an em, negative moves right) past which a gap
// between two strings is a word space. Kerning stays well under it; a space is about 250.
const wordGap = -180

// pageText returns the text of one page, keeping the word and line breaks that the PDF draws by
// positioning instead of with space characters: a TJ gap wider than wordGap, a new text object
// or a sideways move is a space, a move to another line a newline.
func pageText(p pdf.Page) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("%v", r)
		}
	}()
	contents := p.V.Key("Contents")
	if p.V.IsNull() || contents.Kind() == pdf.Null {
		return "", nil
	}
	fonts := map[string]*pdf.Font{}
	for _, name := range p.Fonts() {
		f := p.Font(name)
		fonts[name] = &f
	}
	var (
		t   pdfWriter
		enc pdf.TextEncoding = rawEncoding{}
		pos textPos
	)
	show := func(raw string) {
		pos.shown(&t)
		t.write(enc.Decode(raw))
	}
	pdf.Interpret(contents, func(stk *pdf.Stack, op string) {
		args := make([]pdf.Value, stk.Len())
		for i := len(args) - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "BT":
			pos.x, pos.y, pos.moved = 0, 0, true
		case "T*":
			pos.y, pos.moved = pos.y-1, true
		case "Td", "TD":
			if len(args) == 2 {
				pos.x += args[0].Float64()
				pos.y += args[1].Float64()
				pos.moved = true
			}
		case "Tm":
			if len(args) == 6 {
				pos.x, pos.y, pos.moved = args[4].Float64(), args[5].Float64(), true
			}
		case "Tf":
			enc = rawEncoding{}
			if len(args) == 2 {
				if f, ok := fonts[args[0].Name()]; ok && f.V.Kind() != pdf.Null {
					enc = f.Encoder()
				}
			}
		case "'", "\"":
			pos.y, pos.moved = pos.y-1, true
			if len(args) > 0 {
				show(args[len(args)-1].RawString())
			}
		case "Tj":
			if len(args) == 1 {
				show(args[0].RawString())
			}
		case "TJ":
			if len(args) != 1 {
				return
			}
			v := args[0]
			for i := 0; i < v.Len(); i++ {
				switch x := v.Index(i); x.Kind() {
				case pdf.String:
					show(x.RawString())
				case pdf.Integer, pdf.Real:
					if x.Float64() < wordGap {
						t.space()
					}
				}
			}
		}
	})
	return t.String(), nil
}

// textPos follows the text position far enough to tell a new line (another y) from a sideways
// move (a word apart) when text is shown.
type textPos struct {
	x, y   float64
	lastY  float64
	shownY bool // text was shown before, at lastY
	moved  bool // the position changed since text was last shown
}

func (p *textPos) shown(t *pdfWriter) {
	switch {
	case p.shownY && p.y != p.lastY:
		t.newline()
	case p.shownY && p.moved:
		t.space()
	}
	p.lastY, p.shownY, p.moved = p.y, true, false
}

// pdfWriter collects page text. A separator is held until more text follows, so none is
// doubled and none trails.
type pdfWriter struct {
	strings.Builder
	pending byte // ' ' or '\n' to write before the next text, or 0
}

func (t *pdfWriter) write(s string) {
	for _, r := range s {
		switch {
		case r == 0:
		case r == '\n':
			t.newline()
		case unicode.IsSpace(r):
			t.space()
		default:
			if t.pending != 0 && t.Len() > 0 {
				t.WriteByte(t.pending)
			}
			t.pending = 0
			t.WriteRune(r)
		}
	}
}

func (t *pdfWriter) space() {
	if t.pending == 0 {
		t.pending = ' '
	}
}

func (t *pdfWriter) newline() { t.pending = '\n' }

// rawEncoding reads the bytes of a string as they are, for text without a known font.
type rawEncoding struct{}

func (rawEncoding) Decode(raw string) string { return raw }
