package plot

import (
	gplot "gonum.org/v1/plot"

	"bytes"
	"encoding/xml"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strings"
	"testing"
)

func TestSmooth(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		ys   []float64
		w    float64
		want []float64
	}{
		{"weight 0 is the raw curve", []float64{1, 5, 2}, 0, []float64{1, 5, 2}},
		{"debiased: starts at the first value", []float64{10, 10, 10}, 0.9, []float64{10, 10, 10}},
		{"a step is followed slowly", []float64{0, 1}, 0.5, []float64{0, 2.0 / 3}}, // (0.5·0.5·0 + 0.5·1) / (1 − 0.5²)
		{"NaN stays and leaves the average alone", []float64{nan, 4, nan, 4}, 0.6, []float64{nan, 4, nan, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Smooth(tc.ys, tc.w)
			for i := range got {
				if !(math.Abs(got[i]-tc.want[i]) < 1e-12 || math.IsNaN(got[i]) && math.IsNaN(tc.want[i])) {
					t.Fatalf("Smooth(%v, %v) = %v, want %v", tc.ys, tc.w, got, tc.want)
				}
			}
		})
	}
}

func TestTicksAreRound(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string // the labelled ticks
		log    bool
	}{
		{lo: 0.001, hi: 50, want: "0.001 0.01 0.1 1 10", log: true},
		{lo: 0.04, hi: 30, want: "0.05 0.1 0.2 0.5 1 2 5 10 20", log: true},
		{lo: 0.04, hi: 0.2, want: "0.050 0.075 0.100 0.125 0.150 0.175 0.200", log: true}, // within a decade: round linear steps
		{0, 149504, "0 25k 50k 75k 100k 125k", false},
		{-20, 520, "0 100 200 300 400 500", false},
		{-0.011, 0.013, "-0.010 -0.005 0 0.005 0.010", false},
		{0, 1, "0 0.2 0.4 0.6 0.8 1.0", false},
		{0, 2.4e6, "0 0.5M 1.0M 1.5M 2.0M", false},
		{0, 37, "0 10 20 30", false},
		{0, 2000, "0 500 1000 1500 2000", false},
		{0, 1e6, "0 0.2M 0.4M 0.6M 0.8M 1.0M", false},
	} {
		var labels []string
		var tk gplot.Ticker = ticker{}
		if tc.log {
			tk = logTicker{}
		}
		for _, tk := range tk.Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if got := strings.Join(labels, " "); got != tc.want {
			t.Errorf("ticks of [%v, %v] = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}

// twoRuns are two rising curves, the first with a band.
func twoRuns() []Series {
	var a, b Series
	a.Name, b.Name = "run-alpha", "run-beta"
	for i := 0; i < 50; i++ {
		x := float64(i * 2048)
		y := 500 * (1 - math.Exp(-float64(i)/15))
		a.X, a.Y = append(a.X, x), append(a.Y, y)
		a.Lo, a.Hi = append(a.Lo, y*0.5), append(a.Hi, math.Min(500, y*1.5))
		b.X, b.Y = append(b.X, x), append(b.Y, y*0.7)
	}
	a.Y[0], a.Lo[0], a.Hi[0] = math.NaN(), math.NaN(), math.NaN() // no episode finished yet
	return []Series{a, b}
}

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		w, h   int
		smooth float64
	}{
		{"png, default size", Options{Format: "png"}, 960, 600, 0},
		{"png, smoothed, small", Options{Format: "png", Width: 400, Height: 300, Smooth: 0.9}, 400, 300, 0.9},
		{"png, titled", Options{Format: "png", Width: 1200, Height: 500, Title: "CartPole-v1", XLabel: "environment steps", YLabel: "ep_return_mean"}, 1200, 500, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Render(twoRuns(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
				t.Fatalf("picture is %dx%d, want %dx%d", b.Dx(), b.Dy(), tc.w, tc.h)
			}
			for i := range 2 {
				if n := count(img, Palette[i]); n < 50 {
					t.Errorf("series %d's colour %v shows on %d pixels", i, Palette[i], n)
				}
			}
			if n := count(img, color.NRGBA{0xff, 0xff, 0xff, 0xff}); n < tc.w*tc.h/2 {
				t.Errorf("only %d white pixels: no white background", n)
			}
		})
	}
}

// count is the number of pixels of exactly the colour c.
func count(img image.Image, c color.NRGBA) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA) == c {
				n++
			}
		}
	}
	return n
}

func TestRenderSVGHasTheLegend(t *testing.T) {
	data, err := Render(twoRuns(), Options{Format: "svg", Smooth: 0.6, Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var text strings.Builder
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	for _, name := range []string{"run-alpha", "run-beta", "20k"} {
		if !strings.Contains(text.String(), name) {
			t.Errorf("the SVG's text lacks %q", name)
		}
	}
}

func TestRenderRefuses(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name   string
		series []Series
		opts   Options
		want   string
	}{
		{"format", twoRuns(), Options{Format: "gif"}, "neither png nor svg"},
		{"smoothing", twoRuns(), Options{Format: "png", Smooth: 1}, "not in [0, 1)"},
		{"size", twoRuns(), Options{Format: "png", Width: 50, Height: 50}, "too small"},
		{"lengths", []Series{{Name: "x", X: []float64{1, 2}, Y: []float64{1}}}, Options{Format: "png"}, "different lengths"},
		{"nothing finite", []Series{{Name: "x", X: []float64{1, 2}, Y: []float64{nan, nan}}}, Options{Format: "png"}, "no finite points"},
		{"nothing in the range", twoRuns(), Options{Format: "png", XMin: 1e9, XMax: 2e9}, "in the chosen range"},
		{"nothing positive on a log scale", []Series{{Name: "x", X: []float64{1, 2}, Y: []float64{-1, 0}}}, Options{Format: "png", LogY: true}, "on a log scale"},
		{"an infinite range", twoRuns(), Options{Format: "png", XMax: math.Inf(1)}, "not finite"},
	} {
		if _, err := Render(tc.series, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// Values at the ends of float64 draw (or are refused) at once: no tick
// loop that cannot move, no log axis reaching zero, no panic.
func TestRenderExtremeValues(t *testing.T) {
	one := 0.1
	next := math.Nextafter(one, 1)
	for _, c := range []struct {
		name string
		ys   []float64
		logY bool
	}{
		{"one ulp apart", []float64{one, next, one, next}, false},
		{"one ulp apart, log", []float64{one, next}, true},
		{"all equal", []float64{3, 3, 3}, false},
		{"all zero", []float64{0, 0}, false},
		{"smallest subnormal, log", []float64{5e-324, 5e-324}, true},
		{"subnormal to huge, log", []float64{5e-324, 1e308}, true},
		{"largest values", []float64{math.MaxFloat64, -math.MaxFloat64}, false},
		{"largest, log", []float64{math.MaxFloat64, math.MaxFloat64}, true},
		{"huge and tiny steps", []float64{1e300, 1e300 + 1e284, 1e300}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			xs := make([]float64, len(c.ys))
			for i := range xs {
				xs[i] = float64(i * 512)
			}
			for _, format := range []string{"png", "svg"} {
				for _, smooth := range []float64{0, 0.6} {
					if _, err := Render([]Series{{Name: "s", X: xs, Y: c.ys}}, Options{Format: format, LogY: c.logY, Smooth: smooth, Width: 300, Height: 200}); err != nil {
						t.Errorf("%s, smoothing %v: %v", format, smooth, err)
					}
				}
			}
		})
	}
}

// Control characters in a title or a series name leave the SVG
// well-formed.
func TestSVGTextIsWellFormed(t *testing.T) {
	evil := "t\x1b]0;x\a\x00\x01\ufffe\xff<&>"
	svg, err := Render([]Series{{Name: evil, X: []float64{0, 1}, Y: []float64{0, 1}}}, Options{Format: "svg", Title: evil, XLabel: evil, YLabel: evil})
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
}
