package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// fit makes s exactly h lines of exactly w cells: long lines are cut, short
// ones padded, missing lines added. Every screen passes its output through
// it, so a view can never spill past the terminal or leave stale cells.
func fit(s string, w, h int) string {
	if w <= 0 || h <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	for i, l := range lines {
		lines[i] = fitLine(l, w)
	}
	return strings.Join(lines, "\n")
}

// fitLine cuts or pads one line to exactly w cells.
func fitLine(l string, w int) string {
	if n := ansi.StringWidth(l); n > w {
		l = ansi.Truncate(l, w, "…")
	} else if n < w {
		l += strings.Repeat(" ", w-n)
	}
	return l
}

// cut shortens s to at most w cells, marking the cut with "…".
func cut(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// cutMiddle shortens s to at most w cells by cutting its middle: run names
// differ at both ends (date first, a -2 suffix last).
func cutMiddle(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n <= w {
		return s
	}
	if w < 5 {
		return cut(s, w)
	}
	head := (w - 1) / 2
	tail := w - 1 - head
	return ansi.Truncate(s, head, "") + "…" + ansi.TruncateLeft(s, n-tail, "")
}

// cutLeft keeps the end of s (paths are most telling at the end).
func cutLeft(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.TruncateLeft(s, ansi.StringWidth(s)-w+1, "…")
}

// box draws a rounded panel of exactly w×h cells with a title in the top
// border; body is fitted into the inside.
func box(th *theme, title, body string, w, h int) string {
	if w < 4 || h < 2 {
		return fit(body, max(w, 0), max(h, 0))
	}
	inner := w - 2
	top := th.Border.Render("╭" + strings.Repeat("─", inner) + "╮")
	if title != "" {
		t := cut(" "+title+" ", inner-1)
		top = th.Border.Render("╭─") + th.Heading.Render(t) +
			th.Border.Render(strings.Repeat("─", max(inner-1-ansi.StringWidth(t), 0))+"╮")
	}
	side := th.Border.Render("│")
	var b strings.Builder
	b.WriteString(top)
	if h > 2 {
		for _, l := range strings.Split(fit(body, inner, h-2), "\n") {
			b.WriteString("\n" + side + l + side)
		}
	}
	b.WriteString("\n" + th.Border.Render("╰"+strings.Repeat("─", inner)+"╯"))
	return b.String()
}

// columns joins blocks side by side; each block must already be fitted.
func columns(blocks ...string) string {
	return lipgloss.JoinHorizontal(lipgloss.Top, blocks...)
}

// thousands prints an integer with thousands separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// num prints a metric compactly; undefined values print as "-". Whole
// numbers stay whole (a return of 500 is "500", not "500.0"), large ones
// take thousands separators as the figures do.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v == 0:
		return "0"
	case a >= 1e9:
		return fmt.Sprintf("%.3g", v)
	case a >= 1e4:
		return thousands(int64(math.Round(v)))
	case a >= 100 && v == math.Round(v):
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a < 0.01:
		// 1.23e-3, not 1.23e-03: a panel's column stays narrow.
		s := fmt.Sprintf("%.2e", v)
		return strings.Replace(strings.Replace(s, "e-0", "e-", 1), "e+0", "e", 1)
	}
	return noNegZero(fmt.Sprintf("%.4g", v))
}

// numPM prints mean ± spread with the same decimals, as many as the
// spread's two significant digits need: "1.2 ± 1.2", "487 ± 23".
func numPM(mean, spread float64) string {
	if math.IsNaN(mean) || math.IsNaN(spread) || math.IsInf(mean, 0) || math.IsInf(spread, 0) {
		return num(mean) + " ± " + num(spread)
	}
	dec := 0
	if spread > 0 {
		dec = max(0, 1-int(math.Floor(math.Log10(spread))))
	}
	dec = min(dec, 6)
	return noNegZero(strconv.FormatFloat(mean, 'f', dec, 64)) + " ± " + strconv.FormatFloat(spread, 'f', dec, 64)
}

// steps prints an environment step count as 0, 512, 12.5k, 1.2M.
func steps(v float64) string {
	a := math.Abs(v)
	trim := func(s string) string {
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	switch {
	case a >= 1e9:
		return trim(fmt.Sprintf("%.2f", v/1e9)) + "G"
	case a >= 1e6:
		return trim(fmt.Sprintf("%.2f", v/1e6)) + "M"
	case a >= 1e3:
		return trim(fmt.Sprintf("%.1f", v/1e3)) + "k"
	}
	return fmt.Sprintf("%.0f", v)
}

// duration prints a duration as 0:07, 12:34 or 1:02:03.
func duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// wrapWords wraps text at spaces onto at most lines lines of w cells.
func wrapWords(s string, w, lines int) string { return wrapItems(strings.Fields(s), " ", w, lines) }

// wrapAtSpaces breaks text into lines of at most w cells at its spaces
// (never inside a file name at its hyphens), splitting only a word longer
// than a line.
func wrapAtSpaces(s string, w int) []string {
	var out []string
	cur := ""
	for _, word := range strings.Fields(s) {
		for ansi.StringWidth(word) > w { // a path longer than the pane
			if cur != "" {
				out, cur = append(out, cur), ""
			}
			out = append(out, ansi.Truncate(word, w, ""))
			word = ansi.TruncateLeft(word, w, "")
		}
		switch {
		case cur == "":
			cur = word
		case ansi.StringWidth(cur)+1+ansi.StringWidth(word) <= w:
			cur += " " + word
		default:
			out, cur = append(out, cur), word
		}
	}
	if cur != "" || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}

// wrapItems joins items with sep, starting a new line where the next item
// would not fit; past lines lines, the rest is cut.
func wrapItems(items []string, sep string, w, lines int) string {
	var out []string
	cur := ""
	for _, it := range items {
		switch {
		case cur == "":
			cur = it
		case lipgloss.Width(cur+sep+it) <= w:
			cur += sep + it
		default:
			out = append(out, cur)
			cur = it
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	if len(out) > lines {
		last := strings.Join(out[lines-1:], sep)
		out = append(out[:lines-1], cut(last, w))
	}
	for i := range out {
		out[i] = cut(out[i], w)
	}
	return strings.Join(out, "\n")
}

// plural counts things: "1 key", "4 keys".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return thousands(int64(n)) + " " + many
}

// formatValue prints a config value as it is typed: config.FormatValue's,
// with a table in braces ({sutton_barto_reward = true}, not a bare
// key = value line that reads like another key and cannot be typed back).
func formatValue(v any) string {
	s := config.FormatValue(v)
	if m, ok := v.(map[string]any); ok && len(m) > 0 && !strings.HasPrefix(s, "{") {
		var parts []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				parts = append(parts, l)
			}
		}
		s = "{" + strings.Join(parts, ", ") + "}"
	}
	return s
}
