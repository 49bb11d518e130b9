package trainer

import (
	"encoding/json"
	"math"
	"strconv"
)

// Float is a float64 that encodes NaN (an undefined figure, such as a mean
// return before any episode has finished) as JSON null.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(f), 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	var v float64
	err := json.Unmarshal(b, &v)
	*f = Float(v)
	return err
}

// Metrics is one record of metrics.jsonl, published after every iteration.
// The JSON names are the contract between the trainer, the terminal app,
// headless output and any tooling.
type Metrics struct {
	Iter              int   `json:"iter"`
	Step              int64 `json:"step"` // environment steps over all envs
	TimeS             Float `json:"time_s"`
	SPS               Float `json:"sps"`
	Episodes          int64 `json:"episodes"`       // finished so far
	EpReturnMean      Float `json:"ep_return_mean"` // over the last 100 episodes
	EpReturnMin       Float `json:"ep_return_min"`
	EpReturnMax       Float `json:"ep_return_max"`
	EpLengthMean      Float `json:"ep_length_mean"`
	PolicyLoss        Float `json:"policy_loss"`
	ValueLoss         Float `json:"value_loss"`
	Entropy           Float `json:"entropy"`
	ApproxKL          Float `json:"approx_kl"`
	ClipFrac          Float `json:"clipfrac"`
	ExplainedVariance Float `json:"explained_variance"`
	LR                Float `json:"lr"`
	GradNorm          Float `json:"grad_norm"`
	// Wall seconds this iteration spent collecting experience and
	// optimising (the rest is bookkeeping: metrics, checkpoints, validation).
	RolloutS Float `json:"rollout_s"`
	UpdateS  Float `json:"update_s"`
	// Validation records only.
	ValReturnMean  *Float `json:"val_return_mean,omitempty"`
	ValSuccessRate *Float `json:"val_success_rate,omitempty"`
}

// episodeWindow keeps the returns and lengths of the last n episodes.
type episodeWindow struct {
	returns, lengths []float64
	next, count      int
	total            int64
}

func newEpisodeWindow(n int) *episodeWindow {
	return &episodeWindow{returns: make([]float64, n), lengths: make([]float64, n)}
}

func (w *episodeWindow) add(ret float64, length int) {
	w.returns[w.next], w.lengths[w.next] = ret, float64(length)
	w.next = (w.next + 1) % len(w.returns)
	w.count = min(w.count+1, len(w.returns))
	w.total++
}

// stats returns mean, min, max return and mean length (NaN when empty).
func (w *episodeWindow) stats() (mean, lo, hi, length float64) {
	if w.count == 0 {
		nan := math.NaN()
		return nan, nan, nan, nan
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := 0; i < w.count; i++ {
		r := w.returns[i]
		mean += r
		length += w.lengths[i]
		lo, hi = math.Min(lo, r), math.Max(hi, r)
	}
	return mean / float64(w.count), lo, hi, length / float64(w.count)
}

// explainedVariance is 1 − Var(y − ŷ)/Var(y), NaN when Var(y) = 0.
func explainedVariance(pred, target []float32) float64 {
	var my, md float64
	for i := range target {
		my += float64(target[i])
		md += float64(target[i] - pred[i])
	}
	n := float64(len(target))
	my, md = my/n, md/n
	var vy, vd float64
	for i := range target {
		y, d := float64(target[i])-my, float64(target[i]-pred[i])-md
		vy += y * y
		vd += d * d
	}
	if vy == 0 {
		return math.NaN()
	}
	return 1 - vd/vy
}

// String prints the value compactly ("null" when undefined).
func (f Float) String() string {
	b, _ := f.MarshalJSON()
	return string(b)
}
