package plot

import (
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legendInset keeps the legend off the frame.
const legendInset = vg.Length(8)

// placeLegend puts the legend in the corner of the data area that the
// curves cross least (rising returns leave the bottom right free, falling
// losses the top right), on a white box so faint curves do not cross its
// text. Box and legend are drawn together, as the last plotter, in the
// data area's own canvas: gonum draws p.Legend in the canvas the axes
// leave, which a log axis's padding moves away from the data (the legend
// then floated above the plot, its box empty).
func placeLegend(p *gplot.Plot, entries []legendEntry, pts []plotter.XY, area vg.Point) {
	if len(entries) == 0 {
		return
	}
	l := p.Legend // a copy: p.Legend stays empty and gonum draws nothing
	l.Padding = 2
	l.ThumbnailWidth = vg.Points(24)
	for _, e := range entries {
		l.Add(e.name, e.thumb)
	}
	w, h := legendSize(&l, entries)
	best, bestN := 0, math.MaxInt
	for i, corner := range corners {
		n := 0
		for _, q := range pts {
			if inCorner(p, q, corner, w, h, area) {
				n++
			}
		}
		if n < bestN {
			best, bestN = i, n
		}
	}
	c := corners[best]
	l.Top, l.Left = c.top, c.left
	l.XOffs, l.YOffs = legendInset, -legendInset
	if !c.left {
		l.XOffs = -legendInset
	}
	if !c.top {
		l.YOffs = legendInset
	}
	p.Add(legendBox{corner: c, w: w, h: h, legend: l})
}

type corner struct{ top, left bool }

// corners in order of preference on a tie.
var corners = []corner{{top: true}, {top: false}, {top: true, left: true}, {top: false, left: true}}

// inCorner reports whether a data point falls under the legend in the
// corner of a data area of the given size. The real size is known only
// when drawing; the picture less room for the axes is close enough.
func inCorner(p *gplot.Plot, q plotter.XY, c corner, w, h vg.Length, area vg.Point) bool {
	fx := p.X.Scale.Normalize(p.X.Min, p.X.Max, q.X) // where the axis puts it, a log axis too
	fy := p.Y.Scale.Normalize(p.Y.Min, p.Y.Max, q.Y)
	wx := float64((w + 2*legendInset) / area.X)
	hy := float64((h + 2*legendInset) / area.Y)
	if c.left {
		if fx > wx {
			return false
		}
	} else if fx < 1-wx {
		return false
	}
	if c.top {
		return fy >= 1-hy
	}
	return fy <= hy
}

// legendSize is the extent of the legend's entries: thumbnails, a space
// and the longest name across, the entries down.
func legendSize(l *gplot.Legend, entries []legendEntry) (w, h vg.Length) {
	sty := l.TextStyle
	var eh vg.Length
	for _, e := range entries {
		r := sty.Rectangle(" " + e.name)
		w = max(w, l.ThumbnailWidth+r.Max.X)
		eh = max(eh, sty.Rectangle(e.name).Max.Y)
	}
	h = eh*vg.Length(len(entries)) + l.Padding*vg.Length(len(entries)-1)
	return w, h
}

// legendBox is the legend on its white box, drawn as the last plotter.
type legendBox struct {
	corner corner
	w, h   vg.Length
	legend gplot.Legend
}

func (b legendBox) Plot(c draw.Canvas, _ *gplot.Plot) {
	const pad = vg.Length(4)
	var r vg.Rectangle
	if b.corner.left {
		r.Min.X = c.Min.X + legendInset - pad
		r.Max.X = c.Min.X + legendInset + b.w + pad
	} else {
		r.Max.X = c.Max.X - legendInset + pad
		r.Min.X = c.Max.X - legendInset - b.w - pad
	}
	if b.corner.top {
		r.Max.Y = c.Max.Y - legendInset + pad
		r.Min.Y = c.Max.Y - legendInset - b.h - pad
	} else {
		r.Min.Y = c.Min.Y + legendInset - pad
		r.Max.Y = c.Min.Y + legendInset + b.h + pad
	}
	c.SetColor(color.NRGBA{0xff, 0xff, 0xff, 0xe0})
	c.Fill(r.Path())
	c.SetLineWidth(vg.Points(0.5))
	c.SetColor(color.Gray{0xc0})
	c.Stroke(r.Path())
	b.legend.Draw(c)
}
