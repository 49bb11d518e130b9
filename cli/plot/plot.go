// Package plot is `agenttrainer plot`: one metric of one or more runs drawn
// as a PNG or SVG picture (the drawing is internal/plot's).
package plot

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
	"github.com/agenttrainer/agenttrainer/internal/suggest"
	"github.com/agenttrainer/agenttrainer/runs/runplot"
	"github.com/agenttrainer/agenttrainer/trainer/runstore"
)

// Options are plot's flags and run directories.
type Options struct {
	Runs          []string
	Metric        string
	X             string // "step" or "time"
	Smooth        float64
	Out           string // "": <first run>/<metric>.png
	Format        string // "png" or "svg", from Out's extension
	Title         string // "": the runs' environment
	Width, Height int
	Range         *runplot.Range // nil: the whole X axis
	LogY          bool
}

const args = "RUN_DIR... [--metric M] [--x step|time] [--smooth S] [--range LO-HI] [--log-y] [--out FILE.png|.svg] [--title T] [--size WxH]"

// Parse reads plot's command line.
func Parse(argv []string) (Options, error) {
	o := Options{Width: 960, Height: 600}
	fs := cmdutil.NewFlags("plot", args, "draw a metric of one or more runs as a PNG or SVG picture")
	fs.StringVar(&o.Metric, "metric", "ep_return_mean", "the `name` of any scalar of metrics.jsonl; ep_return_mean is shaded between ep_return_min and ep_return_max")
	fs.StringVar(&o.X, "x", "step", "x axis: `step` (environment steps) or time (wall-clock seconds)")
	fs.Float64Var(&o.Smooth, "smooth", 0.6, "TensorBoard's smoothing `weight` in [0, 1): an exponential moving average, debiased at the start; the raw curve stays faint behind it; 0 draws the raw curve only")
	fs.StringVar(&o.Out, "out", "", "write the picture to `file` (.png or .svg); default <first run>/<metric>.png")
	fs.StringVar(&o.Title, "title", "", "the picture's `title`; default the runs' environment")
	size := fs.String("size", "960x600", "picture size `WxH` in pixels (an SVG's at 96 dpi)")
	xrange := fs.String("range", "", "draw only this part of the X axis: `LO-HI` as 100k-300k (steps), 5m-12m (time), 20%-60%, or 250k- to the end")
	fs.BoolVar(&o.LogY, "log-y", false, "a logarithmic Y axis (values ≤ 0 are left out)")
	rest, err := fs.ParseArgs(argv)
	if err != nil {
		return o, err
	}
	if len(rest) == 0 {
		return o, &cmdutil.UsageError{Err: fmt.Errorf("plot needs at least one run directory"), Usage: fs.Usage()}
	}
	o.Runs = rest
	if _, ok := runstore.LookupMetric(o.Metric); !ok {
		return o, cmdutil.Usagef("unknown metric %q%s (the metrics: %s)", o.Metric,
			suggest.DidYouMean(nearMetrics(o.Metric)), strings.Join(runstore.MetricNames(), ", "))
	}
	if o.X != "step" && o.X != "time" {
		return o, cmdutil.Usagef("--x is step or time, not %q", o.X)
	}
	if !(o.Smooth >= 0 && o.Smooth < 1) {
		return o, cmdutil.Usagef("--smooth is a weight in [0, 1), not %v", o.Smooth)
	}
	if *xrange != "" {
		r, err := runplot.ParseRange(*xrange)
		if err != nil {
			return o, cmdutil.Usagef("--range: %v", err)
		}
		o.Range = &r
	}
	if o.Width, o.Height, err = parseSize(*size); err != nil {
		return o, err
	}
	o.Format = "png"
	if st, err := os.Stat(o.Out); o.Out != "" && err == nil && st.IsDir() {
		return o, cmdutil.Usagef("--out %s is a directory; name the picture's file (e.g. %s)", o.Out, filepath.Join(o.Out, o.Metric+".png"))
	}
	if o.Out != "" {
		switch ext := strings.ToLower(filepath.Ext(o.Out)); ext {
		case ".png", ".svg":
			o.Format = ext[1:]
		default:
			return o, cmdutil.Usagef("--out %s: the picture is a .png or an .svg file", o.Out)
		}
	}
	return o, nil
}

// nearMetrics are the metric names closest to a mistyped one, a name
// without its _mean counting as the name (ep_retrun: ep_return_mean), else
// those that contain it (return: ep_return_mean, ep_return_min).
func nearMetrics(name string) []string {
	name = strings.ToLower(name)
	names := runstore.MetricNames()
	near := suggest.Closest(names, max(2, len(name)/3), func(c string) int {
		return min(suggest.Distance(name, c), suggest.Distance(name, strings.TrimSuffix(c, "_mean")))
	})
	if len(near) == 0 && len(name) >= 3 {
		for _, c := range names {
			if strings.Contains(c, name) && len(near) < 3 {
				near = append(near, c)
			}
		}
	}
	return near
}

// parseSize reads WxH.
func parseSize(s string) (w, h int, err error) {
	ws, hs, found := strings.Cut(strings.ToLower(s), "x")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if !found || err1 != nil || err2 != nil || w < 100 || h < 100 || w > 10000 || h > 10000 {
		return 0, 0, cmdutil.Usagef("--size is WxH in pixels, each 100 to 10000, not %q", s)
	}
	return w, h, nil
}

// Run reads the runs, draws the picture and writes it, printing its path.
// An interrupt (SIGINT, SIGTERM) ends it at once, writing nothing: reading
// and drawing run aside, and the picture is written only when they are
// done.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	type drawn struct {
		data    []byte
		skipped []string
		err     error
	}
	done := make(chan drawn, 1)
	go func() {
		data, skipped, err := runplot.Draw(runplot.Options{Runs: o.Runs, Metric: o.Metric, X: o.X, Smooth: o.Smooth,
			Title: o.Title, Width: o.Width, Height: o.Height, Format: o.Format, Range: o.Range, LogY: o.LogY})
		done <- drawn{data, skipped, err}
	}()
	var d drawn
	select {
	case d = <-done:
	case <-ctx.Done():
		return cmdutil.ErrInterrupted
	}
	data, skipped, err := d.data, d.skipped, d.err
	for _, s := range skipped {
		fmt.Fprintf(stderr, "%s: %s\n", cmdutil.Prog, s)
	}
	if err != nil {
		return cmdutil.Configf("%v", err)
	}
	out := o.Out
	if out == "" {
		out = filepath.Join(o.Runs[0], o.Metric+".png")
	}
	if err := atomicfile.Write(out, data, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(stdout, out)
	return nil
}
