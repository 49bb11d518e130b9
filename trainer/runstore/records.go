package runstore

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
// headless output and any tooling; the metric registry (metrics.go)
// describes each, and encodes and decodes the record. The losses are null
// for an iteration whose update was skipped (too few samples).
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
	// Extra holds the figures beyond these fields, by name: declared
	// metrics (DeclareMetric) and those environments, agents and
	// workflows report ("env/score"). Set and Value reach them.
	Extra map[string]Float `json:"-"`
}

// Edit is one applied live config change, as appended to edits.jsonl.
type Edit struct {
	Iter  int     `json:"iter"`
	Step  int64   `json:"step"`
	TimeS float64 `json:"time_s"`
	Key   string  `json:"key"`
	Value string  `json:"value"`
	Old   string  `json:"old"`
}

// String prints the value compactly ("null" when undefined).
func (f Float) String() string {
	b, _ := f.MarshalJSON()
	return string(b)
}
