// Command ansi2png renders a terminal screen captured with its colours
// (`tmux capture-pane -e -p`) as a PNG picture, for the README:
//
//	tmux capture-pane -e -p -t SESSION | go run ./scripts/ansi2png -out screen.png
//
// It reads SGR colour sequences (16, 256 and 24-bit colours, bold, faint,
// italic, underline, reverse) and draws each cell with the Go Mono fonts;
// box-drawing lines, block elements and braille dots (the app's charts) are
// drawn as shapes so that they join from cell to cell.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/mattn/go-runewidth"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/gomonobold"
	"golang.org/x/image/font/gofont/gomonoitalic"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"

	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
)

func main() {
	in := flag.String("in", "-", "the captured screen (`file`; - for standard input)")
	out := flag.String("out", "screen.png", "the picture to write (`file`)")
	size := flag.Float64("font-size", 15, "font size in pixels")
	pad := flag.Int("pad", 14, "margin around the screen in pixels")
	flag.Parse()
	var r io.Reader = os.Stdin
	if *in != "-" {
		f, err := os.Open(*in)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		r = f
	}
	lines, err := parse(r)
	if err != nil {
		fail(err)
	}
	img, err := render(lines, *size, *pad)
	if err != nil {
		fail(err)
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, img); err != nil {
		fail(err)
	}
	if err := atomicfile.Write(*out, buf.Bytes(), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ansi2png:", err)
	os.Exit(1)
}

// The screen's default colours and the 16 ANSI colours (a dark theme).
var (
	defaultFG = color.RGBA{0xd4, 0xd4, 0xd4, 0xff}
	defaultBG = color.RGBA{0x1c, 0x1c, 0x22, 0xff}
	ansi16    = []color.RGBA{
		{0x1c, 0x1c, 0x22, 0xff}, {0xe0, 0x6c, 0x75, 0xff}, {0x98, 0xc3, 0x79, 0xff}, {0xe5, 0xc0, 0x7b, 0xff},
		{0x61, 0xaf, 0xef, 0xff}, {0xc6, 0x78, 0xdd, 0xff}, {0x56, 0xb6, 0xc2, 0xff}, {0xd4, 0xd4, 0xd4, 0xff},
		{0x5c, 0x63, 0x70, 0xff}, {0xff, 0x7a, 0x85, 0xff}, {0xb5, 0xe8, 0x90, 0xff}, {0xff, 0xd6, 0x8a, 0xff},
		{0x7e, 0xc8, 0xff, 0xff}, {0xde, 0x93, 0xf5, 0xff}, {0x6f, 0xd3, 0xe0, 0xff}, {0xff, 0xff, 0xff, 0xff},
	}
)

// style is one cell's attributes; a nil colour is the default.
type style struct {
	fg, bg                                   *color.RGBA
	bold, faint, italic, underline, reversed bool
}

type cell struct {
	r     rune
	st    style
	width int // 2 for a wide rune, 0 for the cell it covers
}

// parse reads the captured lines into cells.
func parse(r io.Reader) ([][]cell, error) {
	var lines [][]cell
	var st style
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		var line []cell
		s := []rune(sc.Text())
		for i := 0; i < len(s); i++ {
			if s[i] == 0x1b {
				i = escape(s, i, &st)
				continue
			}
			if s[i] < 0x20 {
				continue
			}
			w := runewidth.RuneWidth(s[i])
			if w == 0 {
				continue
			}
			line = append(line, cell{r: s[i], st: st, width: w})
			if w == 2 {
				line = append(line, cell{r: ' ', st: st})
			}
		}
		lines = append(lines, line)
	}
	return lines, sc.Err()
}

// escape consumes the escape sequence at s[i] and returns the index of its
// last rune; SGR sequences update st, others are skipped.
func escape(s []rune, i int, st *style) int {
	if i+1 >= len(s) {
		return i
	}
	switch s[i+1] {
	case '[':
		j := i + 2
		for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
			j++
		}
		if j < len(s) && s[j] == 'm' {
			sgr(string(s[i+2:j]), st)
		}
		return j
	case ']': // OSC: up to BEL or ST
		for j := i + 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 1
			}
		}
		return len(s) - 1
	case '(', ')':
		return min(i+2, len(s)-1)
	}
	return i + 1
}

// sgr applies a Select Graphic Rendition parameter list.
func sgr(params string, st *style) {
	fields := strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' })
	if len(fields) == 0 {
		*st = style{}
		return
	}
	n := make([]int, len(fields))
	for k, f := range fields {
		n[k], _ = strconv.Atoi(f)
	}
	for k := 0; k < len(n); k++ {
		switch p := n[k]; {
		case p == 0:
			*st = style{}
		case p == 1:
			st.bold = true
		case p == 2:
			st.faint = true
		case p == 3:
			st.italic = true
		case p == 4:
			st.underline = true
		case p == 7:
			st.reversed = true
		case p == 22:
			st.bold, st.faint = false, false
		case p == 23:
			st.italic = false
		case p == 24:
			st.underline = false
		case p == 27:
			st.reversed = false
		case p >= 30 && p <= 37:
			st.fg = &ansi16[p-30]
		case p >= 90 && p <= 97:
			st.fg = &ansi16[p-90+8]
		case p >= 40 && p <= 47:
			st.bg = &ansi16[p-40]
		case p >= 100 && p <= 107:
			st.bg = &ansi16[p-100+8]
		case p == 39:
			st.fg = nil
		case p == 49:
			st.bg = nil
		case p == 38 || p == 48:
			c, used := extended(n[k+1:])
			k += used
			if p == 38 {
				st.fg = c
			} else {
				st.bg = c
			}
		}
	}
}

// extended reads the colour after 38 or 48: 5;N or 2;R;G;B.
func extended(n []int) (*color.RGBA, int) {
	switch {
	case len(n) >= 2 && n[0] == 5:
		c := xterm256(n[1])
		return &c, 2
	case len(n) >= 4 && n[0] == 2:
		return &color.RGBA{uint8(n[1]), uint8(n[2]), uint8(n[3]), 0xff}, 4
	}
	return nil, len(n)
}

// xterm256 is colour n of xterm's 256-colour palette.
func xterm256(n int) color.RGBA {
	switch {
	case n < 16:
		return ansi16[max(n, 0)]
	case n < 232:
		n -= 16
		level := func(v int) uint8 {
			if v == 0 {
				return 0
			}
			return uint8(55 + 40*v)
		}
		return color.RGBA{level(n / 36), level(n / 6 % 6), level(n % 6), 0xff}
	}
	g := uint8(8 + 10*(min(n, 255)-232))
	return color.RGBA{g, g, g, 0xff}
}

// faces are the regular, bold and italic fonts at one size.
type faces struct{ regular, bold, italic font.Face }

func newFaces(size float64) (faces, error) {
	var f faces
	for _, x := range []struct {
		ttf  []byte
		into *font.Face
	}{{gomono.TTF, &f.regular}, {gomonobold.TTF, &f.bold}, {gomonoitalic.TTF, &f.italic}} {
		ft, err := opentype.Parse(x.ttf)
		if err != nil {
			return f, err
		}
		*x.into, err = opentype.NewFace(ft, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
		if err != nil {
			return f, err
		}
	}
	return f, nil
}

// render draws the cells on a picture with a margin of pad pixels.
func render(lines [][]cell, size float64, pad int) (*image.RGBA, error) {
	fs, err := newFaces(size)
	if err != nil {
		return nil, err
	}
	adv, _ := fs.regular.GlyphAdvance('M')
	m := fs.regular.Metrics()
	cw := adv.Ceil()
	ch := (m.Ascent + m.Descent).Ceil() + 2
	cols := 0
	for _, l := range lines {
		cols = max(cols, len(l))
	}
	for len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	img := image.NewRGBA(image.Rect(0, 0, cols*cw+2*pad, len(lines)*ch+2*pad))
	draw.Draw(img, img.Bounds(), image.NewUniform(defaultBG), image.Point{}, draw.Src)
	for y, l := range lines {
		for x, c := range l {
			fg, bg := defaultFG, defaultBG
			if c.st.fg != nil {
				fg = *c.st.fg
			}
			if c.st.bg != nil {
				bg = *c.st.bg
			}
			if c.st.reversed {
				fg, bg = bg, fg
			}
			if c.st.faint {
				fg = mix(fg, bg, 0.55)
			}
			cellW := cw * max(c.width, 1)
			r := image.Rect(pad+x*cw, pad+y*ch, pad+x*cw+cellW, pad+(y+1)*ch)
			if bg != defaultBG {
				draw.Draw(img, r, image.NewUniform(bg), image.Point{}, draw.Src)
			}
			if c.width == 0 || c.r == ' ' {
				continue
			}
			if !shape(img, r, c.r, fg) {
				face := fs.regular
				if c.st.bold {
					face = fs.bold
				} else if c.st.italic {
					face = fs.italic
				}
				if _, ok := face.GlyphAdvance(c.r); !ok {
					face = fs.regular
				}
				d := font.Drawer{Dst: img, Src: image.NewUniform(fg), Face: face,
					Dot: fixed.P(r.Min.X, r.Min.Y+1+m.Ascent.Ceil())}
				d.DrawString(string(c.r))
			}
			if c.st.underline {
				u := image.Rect(r.Min.X, r.Max.Y-2, r.Max.X, r.Max.Y-1)
				draw.Draw(img, u, image.NewUniform(fg), image.Point{}, draw.Src)
			}
		}
	}
	return img, nil
}

func mix(a, b color.RGBA, t float64) color.RGBA {
	f := func(x, y uint8) uint8 { return uint8(float64(x)*(1-t) + float64(y)*t) }
	return color.RGBA{f(a.R, b.R), f(a.G, b.G), f(a.B, b.B), 0xff}
}

// shape draws box-drawing lines, block elements and braille patterns as
// shapes filling the cell r; false for any other rune.
func shape(img *image.RGBA, r image.Rectangle, ch rune, c color.RGBA) bool {
	fill := func(x0, y0, x1, y1 int) {
		draw.Draw(img, image.Rect(x0, y0, x1, y1), image.NewUniform(c), image.Point{}, draw.Over)
	}
	w, h := r.Dx(), r.Dy()
	cx, cy := r.Min.X+w/2, r.Min.Y+h/2
	const t = 1 // line thickness, pixels either side of the centre
	// Box drawing: which of the four arms the rune has.
	arms := map[rune]string{
		'─': "lr", '━': "lr", '│': "ud", '┃': "ud",
		'┌': "rd", '┐': "ld", '└': "ru", '┘': "lu",
		'╭': "rd", '╮': "ld", '╰': "ru", '╯': "lu",
		'├': "udr", '┤': "udl", '┬': "lrd", '┴': "lru", '┼': "lrud",
	}
	if a, ok := arms[ch]; ok {
		if strings.Contains(a, "l") {
			fill(r.Min.X, cy-t/2, cx+1, cy-t/2+t)
		}
		if strings.Contains(a, "r") {
			fill(cx, cy-t/2, r.Max.X, cy-t/2+t)
		}
		if strings.Contains(a, "u") {
			fill(cx-t/2, r.Min.Y, cx-t/2+t, cy+1)
		}
		if strings.Contains(a, "d") {
			fill(cx-t/2, cy, cx-t/2+t, r.Max.Y)
		}
		return true
	}
	switch {
	case ch == '█':
		fill(r.Min.X, r.Min.Y, r.Max.X, r.Max.Y)
	case ch == '▀':
		fill(r.Min.X, r.Min.Y, r.Max.X, cy)
	case ch == '▄':
		fill(r.Min.X, cy, r.Max.X, r.Max.Y)
	case ch >= '▁' && ch <= '▇': // lower eighths
		n := int(ch-'▁') + 1
		fill(r.Min.X, r.Max.Y-h*n/8, r.Max.X, r.Max.Y)
	case ch >= '▉' && ch <= '▏': // left eighths, 7/8 down to 1/8
		n := 8 - int(ch-'▉') - 1
		fill(r.Min.X, r.Min.Y, r.Min.X+w*n/8, r.Max.Y)
	case ch >= 0x2800 && ch <= 0x28ff: // braille: dots 1-8 in a 2×4 grid
		bits := int(ch - 0x2800)
		pos := [8][2]int{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}, {0, 3}, {1, 3}}
		d := max(2, w*2/5)
		for i, p := range pos {
			if bits&(1<<i) == 0 {
				continue
			}
			x := r.Min.X + w*(2*p[0]+1)/4 - d/2
			y := r.Min.Y + h*(2*p[1]+1)/8 - d/2
			fill(x, y, x+d, y+d)
		}
	default:
		return false
	}
	return true
}
